//===- NcclVerifyTest.cpp - Parallel layouts on cuda-interpret via NCCL ---===//
//
// `strata verify --device cuda-interpret` runs a parallel plan on emulated
// GPUs whose collectives and send/recv go through the NCCL code path
// (runtime/cuda/nccl, emulated over Gloo) and compares every tensor with the
// serial plan on one CPU device within 1e-5 relative (verify's default; the
// kernels may round some f32 sums in other orders than the CPU's). The
// layouts are a subset of tp 1/2 x sp x dp 1/2 x ZeRO-1 x pp 1/2 x
// 1F1B/interleaved over GPT and Llama chosen to run in about a minute
// (CudaTrainTest covers tp x sp x 1F1B Llama and tp x dp ZeRO-1 GPT); one
// runs as four processes with `strata launch --nproc 4`, `strata launch`
// takes its node layout from Slurm's variables, and --trace shows the NCCL
// calls. scripts/nccl_verify_matrix.sh [--launch] runs the whole matrix.
//
//===----------------------------------------------------------------------===//
#include "test/cuda/TextDirTest.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <thread>
#include <unistd.h>

namespace strata {
namespace {

class NcclVerify : public test::TextDirTest {
protected:
  /// Runs `strata args...` with `env` added; "" on success, else the exit
  /// code and stderr. The stdout is in out_.
  std::string strata(std::vector<std::string> args,
                     std::vector<std::string> env = {}) {
    args.insert(args.begin(), STRATA_BIN);
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    llvm::Optional<llvm::StringRef> redirects[] = {
        llvm::None, llvm::StringRef(out), llvm::StringRef(err)};
    std::vector<std::string> vars;
    for (char **e = environ; *e; ++e)
      if (!llvm::StringRef(*e).startswith("SLURM_"))
        vars.push_back(*e);
    vars.insert(vars.end(), env.begin(), env.end());
    std::vector<llvm::StringRef> refs(vars.begin(), vars.end());
    int code = llvm::sys::ExecuteAndWait(STRATA_BIN, argv,
                                         llvm::ArrayRef<llvm::StringRef>(refs),
                                         redirects, /*secondsToWait=*/240);
    out_ = read(out);
    return code == 0 ? "" : "exit " + std::to_string(code) + ": " + read(err);
  }

  /// A small spec of `family` with `layers` blocks on the test's text.
  std::string spec(const std::string &family, int layers = 2) {
    std::string path =
        dir_ + "/" + family + std::to_string(layers) + ".textproto";
    std::ofstream s(path);
    s << "name: \"m\" family: " << family
      << " vocab_size: 30 make_vocab_size_divisible_by: 16 hidden: 32 "
         "layers: "
      << layers << " heads: 4 seq_len: 16 micro_batch: 4 dropout: 0.1\n"
      << (family == "LLAMA" ? "kv_heads: 2 ffn: 64\n" : "") << "data { path: \""
      << dir_ << "/text.txt\" }\n"
      << "training { steps: 4 lr: 1e-2 min_lr: 1e-3 warmup: 1 "
         "decay_iters: 4 eval_every: 4 seed: 3 grad_clip: 1.0 }\n";
    return path;
  }

  std::string verify(std::vector<std::string> layout, const std::string &family,
                     int layers = 2) {
    layout.insert(layout.begin(), {"verify", spec(family, layers)});
    layout.insert(layout.end(), {"--steps", "1", "--device", "cuda-interpret"});
    return strata(layout);
  }

  std::string out_;

public:
  std::string contents(const std::string &path) { return read(path); }
  std::string run(std::vector<std::string> args) { return strata(args); }
};

TEST_F(NcclVerify, TensorSequenceAndDataParallelZeroGpt) {
  EXPECT_EQ(
      verify({"--tp", "2", "--sp", "--dp", "2", "--distributed-optimizer"},
             "GPT"),
      "");
  EXPECT_NE(out_.find("OK: 110 tensors match"), std::string::npos) << out_;
}

TEST_F(NcclVerify, TensorDataPipelineOneFOneBZeroLlama) {
  EXPECT_EQ(verify({"--tp", "2", "--dp", "2", "--pp", "2", "--microbatches",
                    "2", "--schedule", "1f1b", "--distributed-optimizer"},
                   "LLAMA"),
            "");
  EXPECT_NE(out_.find("OK: 65 tensors match"), std::string::npos) << out_;
}

TEST_F(NcclVerify, DataParallelInterleavedPipelineGpt) {
  EXPECT_EQ(verify({"--dp", "2", "--pp", "2", "--microbatches", "4",
                    "--schedule", "interleaved:2"},
                   "GPT", 4),
            "");
  EXPECT_NE(out_.find("OK: 206 tensors match"), std::string::npos) << out_;
}

// --trace shows each NCCL call on its communicator's row, from when its
// stream reached it until it finished.
TEST_F(NcclVerify, TheTraceShowsNcclCallsOnTheirCommunicatorsRows) {
  std::string trace = dir_ + "/trace.json";
  EXPECT_EQ(
      strata({"train", spec("GPT"), "--tp", "2", "--steps", "1", "--eval-iters",
              "1", "--sample", "0", "--device", "cuda-interpret", "--out",
              dir_ + "/run", "--trace", trace}),
      "");
  std::string text = read(trace);
  EXPECT_NE(text.find("\"nccl [tp] (ranks 0,1)\""), std::string::npos);
  EXPECT_NE(text.find("\"cat\":\"collective\",\"dur\":"), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"all_reduce\""), std::string::npos);
}

/// In rank 0's --trace of a dp 2 step over two microbatches with small
/// buckets (NCCL on cuda-interpret): when its first all_reduce on the dp
/// communicator's row began and its last backward program ended (us).
std::pair<int64_t, int64_t> firstReduceAndLastBackward(NcclVerify &t,
                                                       const std::string &spec,
                                                       const std::string &dir,
                                                       bool overlap) {
  std::string trace = dir + "/trace" + std::to_string(overlap) + ".json";
  EXPECT_EQ(t.run({"train",
                   spec,
                   "--dp",
                   "2",
                   "--grad-accum",
                   "2",
                   "--steps",
                   "1",
                   "--eval-iters",
                   "1",
                   "--sample",
                   "0",
                   "--device",
                   "cuda-interpret",
                   "--dp-bucket-mb",
                   "0.004",
                   std::string("--overlap-grad-reduce=") +
                       (overlap ? "true" : "false"),
                   "--out",
                   dir + "/run" + std::to_string(overlap),
                   "--trace",
                   trace}),
            "");
  auto json = llvm::json::parse(t.contents(trace));
  if (!json) {
    ADD_FAILURE() << llvm::toString(json.takeError());
    return {-1, -1};
  }
  const llvm::json::Array &events =
      *json->getAsObject()->getArray("traceEvents");
  std::set<int64_t> dpRows; // rank 0's rows of NCCL calls over [dp]
  for (const llvm::json::Value &e : events) {
    const llvm::json::Object &o = *e.getAsObject();
    if (o.getString("ph").getValueOr("") == "M" &&
        o.getInteger("pid").getValueOr(-1) == 0)
      if (const llvm::json::Object *args = o.getObject("args"))
        if (args->getString("name").getValueOr("").startswith("nccl [dp]"))
          dpRows.insert(o.getInteger("tid").getValueOr(-1));
  }
  int64_t reduce = -1, backwardEnd = -1;
  for (const llvm::json::Value &e : events) {
    const llvm::json::Object &o = *e.getAsObject();
    if (o.getInteger("pid").getValueOr(-1) != 0 ||
        o.getString("ph").getValueOr("") != "X")
      continue;
    llvm::StringRef name = o.getString("name").getValueOr("");
    int64_t ts = o.getInteger("ts").getValueOr(0),
            end = ts + o.getInteger("dur").getValueOr(0);
    if (name == "all_reduce" &&
        dpRows.count(o.getInteger("tid").getValueOr(-1)))
      reduce = reduce < 0 ? ts : std::min(reduce, ts);
    if (name.startswith("B"))
      backwardEnd = std::max(backwardEnd, end);
  }
  return {reduce, backwardEnd};
}

// Overlapped gradient reduction on the NCCL path, in the trace: the first
// bucket's all_reduce over dp starts on its communicator's stream while
// the last backward runs; with --overlap-grad-reduce=false, after it.
// (GradReduceTest checks the same on CPU devices, and that both give
// bitwise-equal losses and state on CPU and cuda-interpret.)
TEST_F(NcclVerify, TheTraceShowsTheGradientReductionOverlappingTheBackward) {
  std::string s = spec("GPT");
  auto [reduce, end] = firstReduceAndLastBackward(*this, s, dir_, true);
  ASSERT_GE(reduce, 0);
  ASSERT_GE(end, 0);
  EXPECT_LT(reduce, end);
  auto [seqReduce, seqEnd] = firstReduceAndLastBackward(*this, s, dir_, false);
  ASSERT_GE(seqReduce, 0);
  EXPECT_GE(seqReduce, seqEnd);
}

// Ranks as processes (`strata launch --nproc 4`): each process is one rank
// of pp 2 x dp 2 with ZeRO-1, on one emulated GPU (the NCCL unique id
// travels through rank 0's TCP store; activations cross processes by
// send/recv, gradients by reduce-scatter, parameters by all-gather), runs
// the serial plan on its CPU device itself and checks every tensor gathered
// from the four ranks against it within verify's 1e-5 (Verify.cpp: f32
// sums in other orders): the loss and gradients of a microbatch, each
// step's loss (step 2's from the parameters ZeRO-1 gathered) and AdamW's
// moments. Every rank prints its verdict; they are the in-process run's
// numbers.
TEST_F(NcclVerify, LaunchedProcessesVerify) {
  std::vector<std::string> layout = {"--dp",
                                     "2",
                                     "--pp",
                                     "2",
                                     "--microbatches",
                                     "4",
                                     "--distributed-optimizer",
                                     "--steps",
                                     "2",
                                     "--device",
                                     "cuda-interpret"};
  std::vector<std::string> args = {"launch",        "--nproc", "4",
                                   "--master-port", "0",       "--",
                                   "strata",        "verify",  spec("LLAMA")};
  args.insert(args.end(), layout.begin(), layout.end());
  ASSERT_EQ(strata(args), "");
  std::string launched = out_;
  EXPECT_NE(launched.find("[rank 0] verify m: serial (1 CPU device) vs tp=1 "
                          "dp=2 distributed-optimizer pp=2 1f1b "
                          "microbatches=4 recompute=none (4 cuda-interpret "
                          "devices, one process each), 2 AdamW steps"),
            std::string::npos)
      << launched;
  std::smatch ok;
  ASSERT_TRUE(std::regex_search(
      launched, ok,
      std::regex("\\[rank 0\\] (OK: 66 tensors match within 1e-05 .*)")))
      << launched;
  for (int r = 1; r < 4; ++r)
    EXPECT_NE(launched.find("[rank " + std::to_string(r) + "] " + ok[1].str()),
              std::string::npos)
        << launched;
  // The same numbers as every rank in one process.
  std::vector<std::string> one = {"verify", spec("LLAMA")};
  one.insert(one.end(), layout.begin(), layout.end());
  ASSERT_EQ(strata(one), "");
  EXPECT_NE(out_.find(ok[1].str()), std::string::npos) << out_;
}

/// Starts `n` training ranks of `spec` with the parallel flags `layout`
/// without `strata launch` (as torchrun or srun would), `env` added to
/// theirs, and waits until rank 0 logged a step. Rank r's stdout and stderr
/// are dir/out<r> and dir/err<r>.
/// Starts `strata args...` as rank r of n without `strata launch` (as
/// torchrun or srun would: their variables, the rendezvous at `port`), `env`
/// added to this process's; stdout and stderr go to `out` and `err`.
llvm::sys::ProcessInfo spawnRank(int r, int n, const std::string &port,
                                 std::vector<std::string> args,
                                 const std::vector<std::string> &env,
                                 const std::string &out,
                                 const std::string &err) {
  args.insert(args.begin(), STRATA_BIN);
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::vector<std::string> vars;
  for (char **e = environ; *e; ++e)
    vars.push_back(*e);
  for (std::string v : {"RANK=", "LOCAL_RANK="})
    vars.push_back(v + std::to_string(r));
  vars.insert(vars.end(), {"WORLD_SIZE=" + std::to_string(n),
                           "LOCAL_WORLD_SIZE=" + std::to_string(n),
                           "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port});
  vars.insert(vars.end(), env.begin(), env.end());
  std::vector<llvm::StringRef> envp(vars.begin(), vars.end());
  llvm::Optional<llvm::StringRef> redirects[] = {
      llvm::None, llvm::StringRef(out), llvm::StringRef(err)};
  return llvm::sys::ExecuteNoWait(
      STRATA_BIN, argv, llvm::ArrayRef<llvm::StringRef>(envp), redirects);
}

void startRanks(NcclVerify &t, int n, std::vector<std::string> layout,
                const std::string &spec, const std::string &dir,
                std::vector<std::string> env,
                std::vector<llvm::sys::ProcessInfo> &ranks) {
  std::string port = std::to_string(30000 + (getpid() * 7 + n) % 20000);
  ranks.resize(n);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> args{"train", spec};
    args.insert(args.end(), layout.begin(), layout.end());
    args.insert(args.end(),
                {"--steps", "100000", "--eval-iters", "1", "--sample", "0",
                 "--device", "cuda-interpret", "--out", dir + "/run"});
    ranks[r] =
        spawnRank(r, n, port, args, env, dir + "/out" + std::to_string(r),
                  dir + "/err" + std::to_string(r));
    ASSERT_GT(ranks[r].Pid, 0);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(200);
  while (t.contents(dir + "/out0").find("step ") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(t.contents(dir + "/out0").find("step "), std::string::npos)
      << t.contents(dir + "/err0");
}

/// Waits up to `seconds` for `pi` to exit, polling (llvm::sys::Wait with a
/// timeout would kill it first, and return pid -1). The result's Pid is 0
/// while it still runs; never kill by the result's Pid.
llvm::sys::ProcessInfo waitUpTo(const llvm::sys::ProcessInfo &pi,
                                double seconds) {
  auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    llvm::sys::ProcessInfo r = llvm::sys::Wait(pi, 0, false);
    if (r.Pid != 0 || std::chrono::steady_clock::now() > end)
      return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

/// Kills rank 1 and waits up to `limit` s for rank 0 to end (then kills it):
/// rank 0's end (Pid 0 if it did not) and the seconds since the kill.
std::pair<llvm::sys::ProcessInfo, double>
killRankOneAndWaitForZero(llvm::sys::ProcessInfo ranks[2], int limit) {
  kill(ranks[1].Pid, SIGKILL);
  llvm::sys::Wait(ranks[1], 0, true);
  auto killed = std::chrono::steady_clock::now();
  llvm::sys::ProcessInfo done = waitUpTo(ranks[0], limit);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed)
          .count();
  if (done.Pid == 0) {
    kill(ranks[0].Pid, SIGKILL);
    llvm::sys::Wait(ranks[0], 0, true);
  }
  return {done, seconds};
}

/// The thread stacks of the process `pid` (gdb -batch), so a rank that did
/// not exit shows where it waits; written to `file`.
std::string stacks(NcclVerify &t, int pid, const std::string &file) {
  auto gdb = llvm::sys::findProgramByName("gdb");
  if (!gdb)
    return "(no gdb to show its stacks)";
  std::string p = std::to_string(pid);
  llvm::StringRef argv[] = {"gdb",    "-p",  p,
                            "-batch", "-ex", "thread apply all bt"};
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef("/dev/null"),
                                                 llvm::StringRef(file),
                                                 llvm::StringRef(file)};
  llvm::sys::ExecuteAndWait(*gdb, argv, llvm::None, redirects,
                            /*SecondsToWait=*/60);
  return t.contents(file);
}

/// Whether `err` names a failed call by its group's axes and ranks: an
/// NCCL call (`over group [tp] (ranks 0,1) with peer ranks 1`, by the
/// watchdog or by interpret mode's failed Gloo call), or a host-side Gloo
/// collective of the trainer (`over [dp,tp] (ranks 0,1,2,3)`).
bool namesGroupAndPeer(const std::string &err) {
  return std::regex_search(
             err, std::regex("NCCL [a-z_/ ]+ over group \\[[a-z,]+\\] "
                             "\\(ranks [0-9,]+\\)( sends (up|down))? with "
                             "peer ranks? [0-9,]+")) ||
         std::regex_search(
             err, std::regex("over \\[[a-z,]+\\] \\(ranks [0-9,]+\\)"));
}

// When one rank is killed, every other fails its next collective at once
// (the connection closed), names the collective, the group's axes and the
// peers, and exits, well within 30 s.
void killOneRank(NcclVerify &t, int n, std::vector<std::string> layout,
                 const std::string &spec, const std::string &dir,
                 std::vector<std::string> rank0Names) {
  std::vector<llvm::sys::ProcessInfo> ranks;
  startRanks(t, n, layout, spec, dir, {}, ranks);
  if (testing::Test::HasFatalFailure()) {
    for (auto &p : ranks)
      if (p.Pid > 0)
        kill(p.Pid, SIGKILL);
    return;
  }
  // Every rank trains; then rank 1 dies.
  kill(ranks[1].Pid, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    if (r == 1) {
      llvm::sys::Wait(ranks[1], 0, true);
      continue;
    }
    // The ranks end one after the other: each waits what is left of 60 s.
    double left = 60 - std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - killed)
                           .count();
    llvm::sys::ProcessInfo done = waitUpTo(ranks[r], std::max(left, 1.0));
    if (done.Pid == 0) { // still running: show where, then end it
      ADD_FAILURE() << "rank " << r << " did not exit; its threads:\n"
                    << stacks(t, ranks[r].Pid,
                              dir + "/stacks" + std::to_string(r));
      kill(ranks[r].Pid, SIGKILL);
      llvm::sys::Wait(ranks[r], 0, true);
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - killed)
            .count();
    std::string err = t.contents(dir + "/err" + std::to_string(r));
    EXPECT_LT(seconds, 30) << "rank " << r << ": " << err;
    EXPECT_GT(done.ReturnCode, 0) << "rank " << r;
    // Whichever call was in flight: a Gloo one of the trainer (losses) or
    // an NCCL one of the step; a rank whose peers failed first may name
    // that failure (the job's abort).
    EXPECT_TRUE(err.find("error: rank " + std::to_string(r)) !=
                    std::string::npos ||
                err.find("strata train: error:") != std::string::npos)
        << "rank " << r << ": " << err;
    EXPECT_TRUE(namesGroupAndPeer(err)) << "rank " << r << ": " << err;
    if (r == 0)
      EXPECT_TRUE(llvm::any_of(rank0Names, [&](const std::string &name) {
        return err.find(name) != std::string::npos;
      })) << err;
  }
}

TEST_F(NcclVerify, AKilledRankEndsItsPeer) {
  killOneRank(*this, 2, {"--dp", "2"}, spec("GPT"), dir_,
              {"over [dp] (ranks 0,1)",
               "over group [dp] (ranks 0,1) with peer ranks 1"});
}

// Four processes (tp 2 x dp 2): rank 1 killed, ranks 0, 2 and 3 all exit
// within 30 s.
TEST_F(NcclVerify, AKilledRankOfFourEndsEveryRank) {
  // Rank 1 is rank 0's tp peer. Rank 0 names the collective in flight: an
  // NCCL one of the step over its tp group, or over its dp group when its
  // dp peer (rank 2) failed first, or the trainer's gather of the losses
  // over the whole world when the kill lands between steps.
  killOneRank(*this, 4, {"--tp", "2", "--dp", "2"}, spec("GPT"), dir_,
              {"over group [tp] (ranks 0,1) with peer ranks 1",
               "over group [dp] (ranks 0,2) with peer ranks 2",
               "over [dp,tp] (ranks 0,1,2,3)"});
}

// A stopped rank (SIGSTOP) closes no connection: its peer's NCCL call
// waits until the watchdog's per-call timeout (STRATA_NCCL_TIMEOUT, 5 s
// here), which names the call, the group and the peer, aborts every
// communicator of the rank and exits. The heartbeat (which would also find
// the stopped rank) is set far off, so the timeout is what ends the job.
// Once the stopped rank runs again it finds its peer gone and exits too.
// If the stop lands after the step's last NCCL call, its peer waits in the
// trainer's Gloo gather of the losses instead, bounded by
// STRATA_COMM_TIMEOUT (10 s here).
TEST_F(NcclVerify, AStoppedRankIsFoundByTheTimeout) {
  std::vector<llvm::sys::ProcessInfo> ranks;
  startRanks(*this, 2, {"--dp", "2"}, spec("GPT"), dir_,
             {"STRATA_NCCL_TIMEOUT=5", "STRATA_COMM_TIMEOUT=10",
              "STRATA_HEARTBEAT_TIMEOUT=600"},
             ranks);
  if (HasFatalFailure()) {
    for (auto &p : ranks)
      if (p.Pid > 0)
        kill(p.Pid, SIGKILL);
    return;
  }
  kill(ranks[1].Pid, SIGSTOP);
  auto stopped = std::chrono::steady_clock::now();
  llvm::sys::ProcessInfo peer = waitUpTo(ranks[0], 60);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped)
          .count();
  kill(ranks[1].Pid, SIGCONT);
  llvm::sys::ProcessInfo resumed = waitUpTo(ranks[1], 60);
  for (int r = 0; r < 2; ++r)
    if ((r == 0 ? peer : resumed).Pid == 0) { // still running: show where
      ADD_FAILURE() << "rank " << r << " did not exit; its threads:\n"
                    << stacks(*this, ranks[r].Pid,
                              dir_ + "/stacks" + std::to_string(r));
      kill(ranks[r].Pid, SIGKILL);
      llvm::sys::Wait(ranks[r], 0, true);
    }
  std::string err0 = read(dir_ + "/err0"), err1 = read(dir_ + "/err1");
  // 5 s of timeout, plus the watchdog's 100 ms polls and a busy machine.
  EXPECT_LT(seconds, 20) << err0;
  EXPECT_EQ(peer.ReturnCode, 1) << err0;
  EXPECT_TRUE(
      err0.find("error: rank 0: NCCL all_reduce over group [dp] (ranks 0,1) "
                "with peer ranks 1 timed out after 5 s") != std::string::npos ||
      std::regex_search(err0, std::regex("over \\[dp\\] \\(ranks 0,1\\)"
                                         ".*[Tt]imed out")))
      << err0;
  EXPECT_NE(resumed.ReturnCode, 0) << err1;
  EXPECT_NE(err1.find("rank 1"), std::string::npos) << err1;
}

// A rank that dies before its first heartbeat (killed while starting; here
// it never starts) leaves its peers waiting for it in the rendezvous, whose
// store wait ends only after STRATA_COMM_TIMEOUT (300 s): no connection to it
// exists yet to close. The heartbeat (3 s here) counts a rank that has not
// beaten since the watcher started as stopped too, so rank 0 names it and
// exits. Before, rank 0 waited the whole 300 s (a kill 0.37 s after start
// reproduced it: rank 0 in connectFullMesh's store wait).
TEST_F(NcclVerify, ARankThatNeverStartsEndsItsPeer) {
  int port = 30000 + (getpid() * 11) % 20000;
  auto start = std::chrono::steady_clock::now();
  std::string err =
      strata({"train", spec("GPT"), "--dp", "2", "--steps", "2", "--sample",
              "0", "--device", "cuda-interpret", "--out", dir_ + "/run"},
             {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2",
              "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port),
              "STRATA_HEARTBEAT_TIMEOUT=3"});
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // 3 s of silence after the store is up, plus starting and a busy machine.
  EXPECT_LT(seconds, 30) << err;
  EXPECT_NE(err.find("exit 1: "), std::string::npos) << err;
  EXPECT_NE(err.find("strata train: error: rank 1 sent no heartbeat in the 3 "
                     "s since rank 0 started (it did not start, or died "
                     "starting; STRATA_HEARTBEAT_TIMEOUT gives ranks that "
                     "start slowly more time); stopping this rank"),
            std::string::npos)
      << err;
}

// A rank killed while its peers wait for it in the rendezvous (its keys in
// rank 0's TCP store) ends them at once: its store connection closes and
// the server sets the will it left (rank r exited), which fails every
// store wait. Here rank 1 is started with another layout, so that both
// ranks wait in the rendezvous for keys the other never sets, as a peer
// slow to start would leave them; then it is killed. Before, rank 0 waited
// until the heartbeat timeout (60 s by default), or 300 s had rank 1 not
// beaten yet.
TEST_F(NcclVerify, ARankKilledInTheRendezvousEndsItsPeerAtOnce) {
  std::string port = std::to_string(30000 + (getpid() * 13) % 20000);
  llvm::sys::ProcessInfo ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = spawnRank(r, 2, port,
                         {"train", spec("GPT"), r == 0 ? "--tp" : "--dp", "2",
                          "--steps", "2", "--sample", "0", "--device",
                          "cuda-interpret", "--out",
                          dir_ + "/run" + std::to_string(r)},
                         {}, "/dev/null", dir_ + "/err" + std::to_string(r));
    ASSERT_GT(ranks[r].Pid, 0);
  }
  // Both wait in the rendezvous (rank 0 for [tp], rank 1 for [dp]) soon
  // after their note on the vocabulary.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((read(dir_ + "/err0").find("note:") == std::string::npos ||
          read(dir_ + "/err1").find("note:") == std::string::npos) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto [done, seconds] = killRankOneAndWaitForZero(ranks, 60);
  std::string err = read(dir_ + "/err0");
  // The waits read the will every 100 ms; a busy machine adds a little.
  EXPECT_LT(seconds, 10) << err;
  EXPECT_EQ(done.ReturnCode, 1) << err;
  EXPECT_NE(err.find("connecting group [tp] (ranks 0,1) as its rank 0: tcp "
                     "store: rank 1 exited while this rank waited for "
                     "'group/tp/0/1'"),
            std::string::npos)
      << err;
}

// A rank killed while it compiles kernels ends its peer at once: the
// compiler it spawned keeps running, but holds none of its connections
// (HostCompiler closes every descriptor but 0-2 in it). Before, the
// orphaned compiler kept the rank's store and Gloo connections open, and
// its peer waited for the compile to end (or for the 60-s heartbeat).
// Rank 1's compiler here is a wrapper that sleeps 120 s first (a cold
// kernel cache on a loaded machine); rank 0 compiles with the default.
TEST_F(NcclVerify, ARankKilledWhileCompilingEndsItsPeerAtOnce) {
  std::string wrapper = dir_ + "/slow-cxx.sh", mark = dir_ + "/compiling";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                            "if [ \"$1\" != --version ]; then\n"
                            "  echo $$ > "
                         << mark
                         << "\n  sleep 120\n"
                            "fi\nexec c++ \"$@\"\n";
  llvm::sys::fs::setPermissions(wrapper, llvm::sys::fs::all_exe |
                                             llvm::sys::fs::owner_all);
  std::string port = std::to_string(30000 + (getpid() * 17) % 20000);
  llvm::sys::ProcessInfo ranks[2];
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env;
    if (r == 1) // its own kernel cache: it compiles
      env = {"STRATA_CXX=" + wrapper, "XDG_CACHE_HOME=" + dir_ + "/cache"};
    ranks[r] = spawnRank(r, 2, port,
                         {"train", spec("GPT"), "--dp", "2", "--steps", "2",
                          "--sample", "0", "--device", "cuda-interpret",
                          "--out", dir_ + "/run" + std::to_string(r)},
                         env, "/dev/null", dir_ + "/err" + std::to_string(r));
    ASSERT_GT(ranks[r].Pid, 0);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read(mark).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int compiler = std::atoi(read(mark).c_str());
  auto [done, seconds] = killRankOneAndWaitForZero(ranks, 100);
  if (compiler > 0)
    kill(compiler, SIGKILL); // the orphaned wrapper
  std::string err = read(dir_ + "/err0");
  ASSERT_GT(compiler, 0) << "rank 1 never compiled: " << err;
  // Rank 0 may still be compiling its own kernels (a cold cache) when rank 1
  // dies; the wrapper's 120 s is what an inherited connection would add.
  EXPECT_LT(seconds, 60) << err;
  EXPECT_EQ(done.ReturnCode, 1) << err;
  // In the rendezvous (rank 1's will) or in a collective (its connection).
  EXPECT_TRUE(err.find("rank 1 exited") != std::string::npos ||
              namesGroupAndPeer(err))
      << err;
}

// Under srun (one launcher per node), node 1 of 2 starts global ranks 2
// and 3 of 4, meeting at the first host of the node list on the job's port.
TEST_F(NcclVerify, LaunchTakesItsNodeFromSlurm) {
  EXPECT_EQ(strata({"launch", "--nproc", "2", "--", "sh", "-c",
                    "echo $RANK/$WORLD_SIZE/$LOCAL_RANK/$MASTER_ADDR:"
                    "$MASTER_PORT"},
                   {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0",
                    "SLURM_JOB_NODELIST=node[07-08]", "SLURM_JOB_ID=4242"}),
            "");
  EXPECT_NE(out_.find("[rank 0] 2/4/0/node07:24242"), std::string::npos)
      << out_;
  EXPECT_NE(out_.find("[rank 1] 3/4/1/node07:24242"), std::string::npos)
      << out_;
}

} // namespace
} // namespace strata
