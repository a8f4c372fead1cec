//===- NcclTest.cpp - The emulated NCCL, its watchdog, Slurm's variables --===//
//
// Interpret mode's NCCL (runtime/cuda/nccl/InterpretNccl.h) for 3 ranks that
// are threads, each with its own interpret driver: a unique id, non-blocking
// init polled to completion, all-reduce / reduce-scatter / all-gather /
// broadcast on streams, a split, and grouped send/recv in a ring. Results
// are compared bitwise with the same collectives of the Gloo communicators
// strata's CPU devices use (runtime/comm/GlooCommunicator.h), which are the
// independent reference (their reduction order is documented there).
// The watchdog: a rank that never joins an all-reduce makes its peer's
// watchdog report the collective, group and peer, and abort. Slurm: the
// torchrun variables derived from Slurm's, and host list parsing.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/comm/SlurmEnv.h"
#include "runtime/cuda/interpret/InterpretDriver.h"
#include "runtime/cuda/nccl/InterpretNccl.h"
#include "runtime/cuda/nccl/NcclCommunicator.h"
#include "runtime/cuda/nccl/NcclWatchdog.h"
#include "runtime/parallel/Backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>

namespace strata {
namespace {

using namespace cuda;

constexpr int kRanks = 3;

/// Runs fn(rank) on kRanks threads.
void onRanks(const std::function<void(int)> &fn, int n = kRanks) {
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back(fn, r);
  for (auto &t : ts)
    t.join();
}

/// Polls a non-blocking call to completion.
NcclResult await(Nccl &nccl, NcclComm c) {
  NcclResult async = ncclInProgress;
  while (async == ncclInProgress)
    if (nccl.commGetAsyncError(c, &async) != ncclSuccess)
      return ncclInvalidArgument;
  return async;
}

std::vector<float> data(int rank, size_t n) {
  std::mt19937 gen(17 + rank);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

/// One rank's emulated GPU: a driver, its NCCL, and device copies.
struct Gpu {
  std::unique_ptr<Driver> driver = makeInterpretDriver();
  std::unique_ptr<Nccl> nccl;
  StreamHandle stream = nullptr;
  explicit Gpu(std::shared_ptr<GlooRendezvous> rdv) {
    nccl = makeInterpretNccl(*driver, rdv);
    stream = *driver->createStream();
  }
  DevicePtr upload(const std::vector<float> &v) {
    DevicePtr p = *driver->allocate(int64_t(v.size() * 4));
    EXPECT_FALSE(bool(driver->copyToDevice(p, v.data(), v.size() * 4, stream)));
    EXPECT_FALSE(bool(driver->synchronize(stream))); // v may be a temporary
    return p;
  }
  DevicePtr alloc(size_t n) { return *driver->allocate(int64_t(n * 4)); }
  std::vector<float> download(DevicePtr p, size_t n) {
    std::vector<float> v(n);
    EXPECT_FALSE(bool(driver->copyToHost(v.data(), p, n * 4, stream)));
    EXPECT_FALSE(bool(driver->synchronize(stream)));
    return v;
  }
};

TEST(InterpretNccl, CollectivesEqualGlooBitwise) {
  auto rdv = GlooRendezvous::inProcess(std::chrono::seconds(60));
  NcclUniqueId id;
  std::vector<std::unique_ptr<Gpu>> gpus;
  for (int r = 0; r < kRanks; ++r)
    gpus.push_back(std::make_unique<Gpu>(rdv));
  ASSERT_EQ(gpus[0]->nccl->getUniqueId(&id), ncclSuccess);
  constexpr size_t n = 5000; // above Gloo's one-round all-reduce size
  onRanks([&](int r) {
    Gpu &g = *gpus[r];
    NcclConfig cfg;
    cfg.blocking = 0;
    NcclComm comm = nullptr;
    NcclResult init = g.nccl->commInitRankConfig(&comm, kRanks, id, r, &cfg);
    EXPECT_TRUE(init == ncclInProgress || init == ncclSuccess);
    ASSERT_EQ(await(*g.nccl, comm), ncclSuccess);
    auto ref = connectGlooGroup(rdv, "reference", r, kRanks, "reference");
    ASSERT_TRUE(bool(ref)) << llvm::toString(ref.takeError());
    std::vector<float> mine = data(r, n);

    // all_reduce, out of place.
    DevicePtr in = g.upload(mine), out = g.alloc(n);
    ASSERT_EQ(g.nccl->allReduce((void *)in, (void *)out, n, ncclFloat32,
                                ncclSum, comm, g.stream),
              ncclSuccess);
    std::vector<float> want = mine;
    ASSERT_FALSE(
        bool((*ref)->allReduce(want.data(), n, DType::F32, ReduceOp::Sum)));
    EXPECT_EQ(0, std::memcmp(g.download(out, n).data(), want.data(), n * 4));

    // reduce_scatter of n/kRanks-element blocks.
    size_t blk = n / kRanks;
    DevicePtr rs = g.alloc(blk);
    ASSERT_EQ(g.nccl->reduceScatter((void *)in, (void *)rs, blk, ncclFloat32,
                                    ncclSum, comm, g.stream),
              ncclSuccess);
    std::vector<float> rsWant(blk);
    ASSERT_FALSE(bool((*ref)->reduceScatter(mine.data(), rsWant.data(), blk,
                                            DType::F32, ReduceOp::Sum)));
    EXPECT_EQ(0,
              std::memcmp(g.download(rs, blk).data(), rsWant.data(), blk * 4));

    // all_gather of each rank's first 7 elements.
    DevicePtr ag = g.alloc(7 * kRanks);
    ASSERT_EQ(g.nccl->allGather((void *)in, (void *)ag, 7, ncclFloat32, comm,
                                g.stream),
              ncclSuccess);
    std::vector<float> agWant(7 * kRanks);
    ASSERT_FALSE(
        bool((*ref)->allGather(mine.data(), agWant.data(), 7, DType::F32)));
    EXPECT_EQ(g.download(ag, 7 * kRanks), agWant);

    // broadcast from rank 2.
    DevicePtr bc = g.alloc(n);
    ASSERT_EQ(g.nccl->broadcast((void *)in, (void *)bc, n, ncclFloat32, 2, comm,
                                g.stream),
              ncclSuccess);
    EXPECT_EQ(g.download(bc, n), data(2, n));

    // Split: ranks 0 and 1 (keys reversed: rank 1 first), rank 2 alone.
    NcclComm sub = nullptr;
    g.nccl->commSplit(comm, r < 2 ? 0 : 1, -r, &sub, &cfg);
    ASSERT_EQ(await(*g.nccl, sub), ncclSuccess);
    if (r < 2) {
      DevicePtr x = g.upload({float(r + 1)}), y = g.alloc(2);
      ASSERT_EQ(g.nccl->allGather((void *)x, (void *)y, 1, ncclFloat32, sub,
                                  g.stream),
                ncclSuccess);
      EXPECT_EQ(g.download(y, 2), (std::vector<float>{2, 1}));
    }

    // A ring exchange in one group: send to the next, receive the previous.
    DevicePtr got = g.alloc(n);
    g.nccl->groupStart();
    g.nccl->send((void *)in, n, ncclFloat32, (r + 1) % kRanks, comm, g.stream);
    g.nccl->recv((void *)got, n, ncclFloat32, (r + kRanks - 1) % kRanks, comm,
                 g.stream);
    ASSERT_EQ(g.nccl->groupEnd(), ncclSuccess);
    EXPECT_EQ(g.download(got, n), data((r + kRanks - 1) % kRanks, n));
    EXPECT_EQ(g.nccl->commDestroy(sub), ncclSuccess);
    EXPECT_EQ(g.nccl->commDestroy(comm), ncclSuccess);
  });
}

// Rank 1 never joins the all-reduce: rank 0's watchdog times out, names the
// collective, the group and the peer, and aborts; rank 1's next call then
// fails as a remote error, which its watchdog reports too.
TEST(NcclWatchdog, AStoppedPeerIsReportedAndEveryRankAborts) {
  auto rdv = GlooRendezvous::inProcess(
      std::chrono::seconds(4)); // bounds the stuck call
  std::vector<std::unique_ptr<Gpu>> gpus;
  for (int r = 0; r < 2; ++r)
    gpus.push_back(std::make_unique<Gpu>(rdv));
  NcclUniqueId id;
  ASSERT_EQ(gpus[0]->nccl->getUniqueId(&id), ncclSuccess);
  std::string messages[2];
  std::mutex mu;
  std::condition_variable cv;
  onRanks(
      [&](int r) {
        Gpu &g = *gpus[r];
        NcclComm comm = nullptr;
        NcclConfig cfg;
        cfg.blocking = 0;
        g.nccl->commInitRankConfig(&comm, 2, id, r, &cfg);
        ASSERT_EQ(await(*g.nccl, comm), ncclSuccess);
        NcclWatchdog dog(*g.nccl, r, std::chrono::seconds(1),
                         [&, r](const std::string &m) {
                           std::lock_guard<std::mutex> lock(mu);
                           messages[r] = m;
                           cv.notify_all();
                         });
        dog.watch(comm, "[dp] (ranks 0,1)");
        StreamHandle s = *g.driver->createStream();
        NcclCommunicator c(*g.nccl, *g.driver, dog, comm, s, r, 2,
                           "[dp] (ranks 0,1)", {0, 1});
        DevicePtr buf = g.alloc(4);
        c.orderWith(g.stream);
        auto done = [&](int who) {
          std::unique_lock<std::mutex> lock(mu);
          return cv.wait_for(lock, std::chrono::seconds(30),
                             [&] { return !messages[who].empty(); });
        };
        if (r == 0) {
          EXPECT_FALSE(
              bool(c.allReduce((void *)buf, 4, DType::F32, ReduceOp::Sum)));
          ASSERT_TRUE(done(0));
        } else {
          ASSERT_TRUE(done(0)); // stopped until rank 0 gave up
          llvm::Error e =
              c.allReduce((void *)buf, 4, DType::F32, ReduceOp::Sum);
          llvm::consumeError(std::move(e));
          ASSERT_TRUE(done(1));
        }
        llvm::consumeError(g.driver->synchronize(g.stream));
        EXPECT_TRUE(dog.aborted());
      },
      2);
  EXPECT_NE(messages[0].find("NCCL all_reduce over group [dp] (ranks 0,1) "
                             "with peer ranks 1 timed out after 1 s"),
            std::string::npos)
      << messages[0];
  EXPECT_NE(messages[1].find("NCCL all_reduce over group [dp] (ranks 0,1) "
                             "with peer ranks 0 failed"),
            std::string::npos)
      << messages[1];
}

/// Rank 0 of two all-gathers with the default watchdog report; rank 1
/// never joins.
void allGatherWithoutThePeer() {
  auto rdv = GlooRendezvous::inProcess(std::chrono::seconds(30));
  Gpu g0(rdv), g1(rdv);
  NcclUniqueId id;
  g0.nccl->getUniqueId(&id);
  NcclComm c0 = nullptr, c1 = nullptr;
  std::thread peer(
      [&] { g1.nccl->commInitRankConfig(&c1, 2, id, 1, nullptr); });
  g0.nccl->commInitRankConfig(&c0, 2, id, 0, nullptr);
  peer.join();
  NcclWatchdog dog(*g0.nccl, 0, std::chrono::seconds(1));
  dog.watch(c0, "[tp] (ranks 0,1)");
  NcclCommunicator c(*g0.nccl, *g0.driver, dog, c0, *g0.driver->createStream(),
                     0, 2, "[tp] (ranks 0,1)", {0, 1});
  DevicePtr buf = g0.alloc(4);
  c.orderWith(g0.stream);
  llvm::consumeError(c.allGather((void *)buf, (void *)buf, 1, DType::F32));
  std::this_thread::sleep_for(std::chrono::seconds(20));
  std::exit(0); // not reached: the watchdog exits first
}

// The default failure report: the rank prints the message (through
// runtime/comm's reportStall, which the strata driver makes `strata <verb>:
// error: ...`; plain `error: ...` here) and exits (with its threads, here the
// peer's too), so a job never hangs on a lost peer.
// In interpret mode a failed Gloo call is a failed host callback on the
// call's stream. Its error names the call, the group by its axes and the
// peers by their ranks in the job (Nccl::nameComm): here rank 1 aborted its
// communicator (its connections closed), as a killed process does.
TEST(InterpretNccl, AFailedCallNamesItsGroupAndPeers) {
  auto rdv = GlooRendezvous::inProcess(std::chrono::seconds(10));
  std::vector<std::unique_ptr<Gpu>> gpus;
  for (int r = 0; r < 2; ++r)
    gpus.push_back(std::make_unique<Gpu>(rdv));
  NcclUniqueId id;
  ASSERT_EQ(gpus[0]->nccl->getUniqueId(&id), ncclSuccess);
  NcclComm comms[2] = {nullptr, nullptr};
  for (int r = 0; r < 2; ++r) { // non-blocking: both connect on threads
    NcclConfig cfg;
    cfg.blocking = 0;
    gpus[r]->nccl->commInitRankConfig(&comms[r], 2, id, r, &cfg);
  }
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(await(*gpus[r]->nccl, comms[r]), ncclSuccess);
    // Group ranks 0 and 1 are ranks 4 and 6 of the job.
    gpus[r]->nccl->nameComm(comms[r], "[dp] (ranks 4,6)", {4, 6});
  }
  ASSERT_EQ(gpus[1]->nccl->commAbort(comms[1]), ncclSuccess);
  Gpu &g = *gpus[0];
  DevicePtr buf = g.alloc(4);
  ASSERT_EQ(g.nccl->allReduce((void *)buf, (void *)buf, 4, ncclFloat32, ncclSum,
                              comms[0], g.stream),
            ncclSuccess); // enqueued; it fails on the stream
  llvm::Error e = g.driver->synchronize(g.stream);
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_EQ(msg.find("NCCL all_reduce over group [dp] (ranks 4,6) with peer "
                     "ranks 6 failed: "),
            0u)
      << msg;
  // The communicator has failed: later calls are refused when issued.
  EXPECT_EQ(g.nccl->send((void *)buf, 4, ncclFloat32, 1, comms[0], g.stream),
            ncclRemoteError);
  NcclResult async;
  ASSERT_EQ(g.nccl->commGetAsyncError(comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  g.nccl->commAbort(comms[0]);
}

TEST(NcclWatchdogDeathTest, TheDefaultReportExitsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(allGatherWithoutThePeer(), ::testing::ExitedWithCode(1),
              "error: rank 0: NCCL all_gather over group \\[tp\\] "
              "\\(ranks 0,1\\) with peer ranks 1 timed out after 1 s");
}

TEST(SlurmEnv, FirstHostOfANodeList) {
  auto host = [](llvm::StringRef l) {
    auto h = firstSlurmHost(l);
    return h ? *h : "error: " + llvm::toString(h.takeError());
  };
  EXPECT_EQ(host("node[01-04]"), "node01");
  EXPECT_EQ(host("node[07,09-12],gpu3"), "node07");
  EXPECT_EQ(host("gpu[3-5]-ib,cpu1"), "gpu3-ib");
  EXPECT_EQ(host("a1,b2"), "a1");
  EXPECT_EQ(host("solo"), "solo");
  EXPECT_NE(host("node[01-04").find("unclosed"), std::string::npos);
  EXPECT_NE(host("node[x-y]").find("number"), std::string::npos);
}

// srun --gpus-per-task=1 (or --gpu-bind) leaves each task one visible GPU,
// device 0 to it, whatever its local rank; otherwise the local rank picks.
TEST(SlurmEnv, OneBoundGpuIsDeviceZero) {
  EXPECT_EQ(gpuOrdinal(3, "5"), 0);
  EXPECT_EQ(gpuOrdinal(3, "GPU-1b2c3d4e"), 0);
  EXPECT_EQ(gpuOrdinal(3, "0,1,2,3"), 3);
  EXPECT_EQ(gpuOrdinal(3, nullptr), 3);
  // None visible: the driver's error names the local rank's GPU.
  EXPECT_EQ(gpuOrdinal(1, ""), 1);
}

TEST(SlurmEnv, TorchrunVariablesFromSlurms) {
  std::map<std::string, std::string> env{{"SLURM_PROCID", "5"},
                                         {"SLURM_NTASKS", "8"},
                                         {"SLURM_LOCALID", "1"},
                                         {"SLURM_TASKS_PER_NODE", "4(x2)"},
                                         {"SLURM_JOB_NODELIST", "gpu[12-13]"},
                                         {"SLURM_JOB_ID", "123456"}};
  auto lookup = [&](const char *k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  };
  auto vars = torchrunVarsFromSlurm(lookup);
  ASSERT_TRUE(bool(vars)) << llvm::toString(vars.takeError());
  EXPECT_EQ(*vars,
            (std::map<std::string, std::string>{{"RANK", "5"},
                                                {"WORLD_SIZE", "8"},
                                                {"LOCAL_RANK", "1"},
                                                {"LOCAL_WORLD_SIZE", "4"},
                                                {"MASTER_ADDR", "gpu12"},
                                                {"MASTER_PORT", "23456"}}));
  // torchrun's own variables win; outside Slurm there is nothing.
  env["MASTER_ADDR"] = "10.0.0.1";
  env["RANK"] = "0";
  vars = torchrunVarsFromSlurm(lookup);
  ASSERT_TRUE(bool(vars));
  EXPECT_EQ(vars->count("MASTER_ADDR") + vars->count("RANK"), 0u);
  env.erase("SLURM_PROCID");
  vars = torchrunVarsFromSlurm(lookup);
  ASSERT_TRUE(bool(vars));
  EXPECT_TRUE(vars->empty());
  env["SLURM_PROCID"] = "x";
  env.erase("RANK");
  vars = torchrunVarsFromSlurm(lookup);
  ASSERT_FALSE(bool(vars));
  EXPECT_NE(llvm::toString(vars.takeError()).find("SLURM_PROCID='x'"),
            std::string::npos);
}

} // namespace
} // namespace strata
