//===- NcclOneRankTest.cpp - The NCCL path with a communicator of one -----===//
//
// NcclCommunicator over a one-rank NCCL communicator, ordered with a compute
// stream: all-reduce, all-gather, reduce-scatter and broadcast of one rank
// give back its own data, a split makes a second communicator, and the
// watchdog stays quiet. In nccl_test it runs on interpret mode's NCCL; in
// the `gpu`-labelled cuda_gpu_test (STRATA_CUDA_GPU) on GPU 0 with the real
// libnccl.so.2, skipped without a GPU; scripts/gpu_check.sh runs it there.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/GlooCommunicator.h"
#include "runtime/cuda/interpret/InterpretDriver.h"
#include "runtime/cuda/nccl/InterpretNccl.h"
#include "runtime/cuda/nccl/NcclCommunicator.h"
#include "runtime/cuda/nccl/NcclWatchdog.h"

#include <gtest/gtest.h>

#include <numeric>

namespace strata {
namespace {

using namespace cuda;

TEST(NcclOneRank, CollectivesOfOneRankReturnItsData) {
  auto rdv = GlooRendezvous::inProcess(std::chrono::seconds(30));
#ifdef STRATA_CUDA_GPU
  auto opened = openRealDriver(0);
  if (!opened) {
    GTEST_SKIP() << "no GPU: " << llvm::toString(opened.takeError());
  }
  std::unique_ptr<Driver> driver = std::move(*opened);
  auto real = openRealNccl();
  ASSERT_TRUE(bool(real)) << llvm::toString(real.takeError());
  std::unique_ptr<Nccl> nccl = std::move(*real);
#else
  std::unique_ptr<Driver> driver = makeInterpretDriver();
  std::unique_ptr<Nccl> nccl = makeInterpretNccl(*driver, rdv);
#endif
  NcclUniqueId id;
  ASSERT_EQ(nccl->getUniqueId(&id), ncclSuccess);
  NcclConfig config;
  config.blocking = 0;
  NcclComm world = nullptr;
  NcclResult r = nccl->commInitRankConfig(&world, 1, id, 0, &config);
  ASSERT_TRUE(r == ncclSuccess || r == ncclInProgress) << r;
  NcclResult async = ncclInProgress;
  while (async == ncclInProgress)
    ASSERT_EQ(nccl->commGetAsyncError(world, &async), ncclSuccess);
  ASSERT_EQ(async, ncclSuccess);
  NcclComm half = nullptr;
  r = nccl->commSplit(world, 0, 0, &half, &config);
  ASSERT_TRUE(r == ncclSuccess || r == ncclInProgress) << r;
  for (async = ncclInProgress; async == ncclInProgress;)
    ASSERT_EQ(nccl->commGetAsyncError(half, &async), ncclSuccess);
  ASSERT_EQ(async, ncclSuccess);

  std::string failure;
  {
    NcclWatchdog dog(*nccl, 0, std::chrono::seconds(60),
                     [&](const std::string &m) { failure = m; });
    dog.watch(world, "[world] (ranks 0)");
    dog.watch(half, "[split] (ranks 0)");
    StreamHandle compute = *driver->createStream();
    NcclCommunicator c(*nccl, *driver, dog, half, *driver->createStream(), 0, 1,
                       "[split] (ranks 0)", {0});
    c.orderWith(compute);
    constexpr int64_t n = 1000;
    std::vector<float> x(n), y(n, -1);
    std::iota(x.begin(), x.end(), 0.5f);
    DevicePtr a = *driver->allocate(n * 4), b = *driver->allocate(n * 4);
    ASSERT_FALSE(bool(driver->copyToDevice(a, x.data(), n * 4, compute)));
    auto check = [&](const char *what) {
      ASSERT_FALSE(bool(driver->copyToHost(y.data(), b, n * 4, compute)));
      ASSERT_FALSE(bool(driver->synchronize(compute)));
      EXPECT_EQ(x, y) << what;
      ASSERT_FALSE(bool(driver->fill(b, 0xFF, n * 4, compute)));
    };
    ASSERT_FALSE(
        bool(c.allReduce((void *)a, (void *)b, n, DType::F32, ReduceOp::Sum)));
    check("all_reduce");
    ASSERT_FALSE(bool(c.allGather((void *)a, (void *)b, n, DType::F32)));
    check("all_gather");
    ASSERT_FALSE(bool(
        c.reduceScatter((void *)a, (void *)b, n, DType::F32, ReduceOp::Sum)));
    check("reduce_scatter");
    ASSERT_FALSE(bool(driver->copyOnDevice(b, a, n * 4, compute)));
    ASSERT_FALSE(bool(c.broadcast((void *)b, n, DType::F32, 0)));
    check("broadcast");
    ASSERT_FALSE(bool(c.release()));
    ASSERT_FALSE(bool(driver->free(a)));
    ASSERT_FALSE(bool(driver->free(b)));
    ASSERT_FALSE(bool(driver->destroyStream(compute)));
    EXPECT_FALSE(dog.aborted());
  }
  EXPECT_EQ(failure, "");
  EXPECT_EQ(nccl->commDestroy(world), ncclSuccess);
}

} // namespace
} // namespace strata
