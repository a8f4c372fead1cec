//===- RunSafetyTest.cpp - Training runs stop cleanly and lose nothing
//-----===//
//
// Runs the strata binary on a tiny Llama: non-finite values in specs and
// checkpoints are refused, a diverging run stops naming the step and keeps
// its last good checkpoint, SIGINT/SIGTERM save and exit 130/143 (alone and
// under `strata launch`), --out is never silently reused, a resume drops the
// metrics written after its checkpoint and names the spec fields it cannot
// change, impossible models and layouts fail before anything is allocated,
// and a stopped rank ends the job, under `strata launch` or without it.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/TcpStore.h"
#include "runtime/io/Checkpoint.h"
#include "test/cli/RunStrata.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <limits>
#include <regex>
#include <thread>

namespace strata {
namespace {

struct Result : strata::test::RunResult {
  double seconds = 0;
};

class RunSafety : public ::testing::Test {
protected:
  void SetUp() override {
    std::ofstream text(dir_.path("text.txt"));
    for (int i = 0; i < 300; ++i)
      text << "to be or not to be, that is the question " << i << "\n";
  }

  std::string read(const std::string &path) {
    return strata::test::slurp(path);
  }

  /// A tiny Llama spec (with `extra` appended) and its path.
  std::string spec(const std::string &extra = "",
                   const std::string &lr = "1e-2") {
    std::ofstream s(dir_.path("spec.textproto"));
    s << "name: \"t\" family: LLAMA vocab_size: 1 "
         "make_vocab_size_divisible_by: 16\n"
         "hidden: 16 layers: 1 heads: 4 kv_heads: 2 ffn: 32 seq_len: 8 "
         "micro_batch: 4 dropout: 0.1\n"
      << extra << "\ntraining { steps: 4 lr: " << lr
      << " min_lr: 1e-3 warmup: 1 grad_accum: 2 eval_every: 0 seed: 3 "
         "grad_clip: 1.0 }\n";
    return dir_.path("spec.textproto");
  }

  /// `strata train SPEC` on the test's text into dir_/out, plus `args`.
  std::vector<std::string> train(std::vector<std::string> args = {}) {
    std::vector<std::string> a = {"train",    dir_.path("spec.textproto"),
                                  "--data",   dir_.path("text.txt"),
                                  "--sample", "0",
                                  "--out",    out()};
    a.insert(a.end(), args.begin(), args.end());
    return a;
  }
  std::string out() const { return dir_.path("out"); }

  Result strata(const std::vector<std::string> &args) {
    auto t0 = std::chrono::steady_clock::now();
    Result r{strata::test::runStrata(args)};
    r.seconds = since(t0);
    return r;
  }

  /// Starts `strata args...`, sends `sig` once `ready()` holds, and waits.
  Result interrupt(std::vector<std::string> args, int sig,
                   const std::function<bool()> &ready) {
    args.insert(args.begin(), STRATA_BIN);
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    std::string outFile = dir_.path("stdout"), errFile = dir_.path("stderr");
    llvm::Optional<llvm::StringRef> redirects[] = {
        llvm::None, llvm::StringRef(outFile), llvm::StringRef(errFile)};
    auto t0 = std::chrono::steady_clock::now();
    llvm::sys::ProcessInfo pi =
        llvm::sys::ExecuteNoWait(STRATA_BIN, argv, llvm::None, redirects);
    EXPECT_GT(pi.Pid, 0);
    while (!ready() && since(t0) < 60)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::kill(pi.Pid, sig);
    pi =
        llvm::sys::Wait(pi, /*SecondsToWait=*/60, /*WaitUntilTerminates=*/true);
    Result r;
    r.rc = pi.ReturnCode;
    r.out = read(outFile);
    r.err = read(errFile);
    r.seconds = since(t0);
    return r;
  }

  /// Starts `strata args...` as rank `rank` of 2 with the rendezvous at
  /// `port`, without `strata launch` (as torchrun or srun start ranks);
  /// its stderr goes to `errFile`.
  llvm::sys::ProcessInfo startRank(int rank, int port,
                                   std::vector<std::string> args,
                                   std::string &errFile) {
    args.insert(args.begin(), STRATA_BIN);
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    std::vector<std::string> env;
    for (char **e = environ; *e; ++e)
      env.push_back(*e);
    for (std::string v : std::vector<std::string>{
             "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
             "STRATA_HEARTBEAT_TIMEOUT=5", "RANK=" + std::to_string(rank),
             "LOCAL_RANK=" + std::to_string(rank),
             "MASTER_PORT=" + std::to_string(port)})
      env.push_back(v);
    std::vector<llvm::StringRef> envp(env.begin(), env.end());
    errFile = dir_.path("stderr" + std::to_string(rank));
    llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef("/dev/null"),
                                                   llvm::StringRef("/dev/null"),
                                                   llvm::StringRef(errFile)};
    return llvm::sys::ExecuteNoWait(
        STRATA_BIN, argv, llvm::ArrayRef<llvm::StringRef>(envp), redirects);
  }

  static double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  }

  /// The "step" of every metrics line with a "loss".
  std::vector<int> lossSteps() {
    std::string text = read(out() + "/metrics.jsonl");
    std::regex re("\"lr\":[^,}]*,\"step\":([0-9]+)");
    std::vector<int> steps;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end;
         ++it)
      steps.push_back(std::stoi((*it)[1]));
    return steps;
  }

  int64_t checkpointStep() {
    auto c = loadCheckpoint(out() + "/checkpoint.bin");
    if (!c) {
      ADD_FAILURE() << llvm::toString(c.takeError());
      return -1;
    }
    return c->meta.getInteger("step").getValueOr(-1);
  }

  strata::test::TempDir dir_;
};

TEST_F(RunSafety, NonFiniteSpecValueIsRefusedBeforeAnythingIsWritten) {
  spec("", "inf");
  Result r = strata(train());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("lr must be finite and non-negative, got inf"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(llvm::sys::fs::exists(out()));
}

// A learning rate of 1e30 (in the spec: the --lr flag stops at 1) blows the
// weights up within a step or two: the run stops at the first non-finite
// loss, gradient norm or weight, names that step, keeps the checkpoint of the
// step before (--save-every 1) and logs no nan.
TEST_F(RunSafety, DivergedRunStopsNamingTheStepAndKeepsTheLastCheckpoint) {
  spec();
  ASSERT_EQ(strata(train({"--steps", "2"})).rc, 0);
  spec("", "1e30");
  Result r = strata(train({"--resume", "--steps", "50", "--save-every", "1"}));
  EXPECT_EQ(r.rc, 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex("step ([0-9]+): the (.*) is (nan|inf|-inf): training "
                 "diverged; the checkpoint of step ([0-9]+) \\(")))
      << r.err;
  int failed = std::stoi(m[1]), kept = std::stoi(m[4]);
  EXPECT_GT(failed, 2);
  EXPECT_EQ(kept, failed - 1);
  EXPECT_EQ(checkpointStep(), kept); // loads: every tensor finite
  EXPECT_NE(r.err.find("strata train: note: resuming with a changed "
                       "training.lr"),
            std::string::npos)
      << r.err;
  std::string metrics = read(out() + "/metrics.jsonl");
  EXPECT_EQ(metrics.find("nan"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("inf"), std::string::npos) << metrics;
}

/// A checkpoint file with `ckpt`'s tensors and meta, written here (not by
/// strata, which refuses to save non-finite values) in the documented format
/// of runtime/io/Checkpoint.h, with valid CRCs.
void writeCheckpointBytes(const std::string &path, const Checkpoint &ckpt) {
  namespace endian = llvm::support::endian;
  auto crc = [](const void *p, size_t n) {
    return llvm::crc32(
        llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(p), n));
  };
  std::string data;
  llvm::json::Array entries;
  for (const NamedTensor &nt : ckpt.tensors) {
    data.resize((data.size() + 63) / 64 * 64, '\0');
    llvm::json::Array shape;
    for (int64_t d : nt.tensor.shape())
      shape.push_back(d);
    entries.push_back(llvm::json::Object{
        {"name", nt.name},
        {"dtype", dtypeName(nt.tensor.dtype())},
        {"shape", std::move(shape)},
        {"offset", int64_t(data.size())},
        {"crc32", int64_t(crc(nt.tensor.raw(), nt.tensor.bytes()))}});
    data.append(static_cast<const char *>(nt.tensor.raw()),
                size_t(nt.tensor.bytes()));
  }
  data.resize((data.size() + 63) / 64 * 64, '\0');
  std::string header;
  llvm::raw_string_ostream(header) << llvm::json::Value(
      llvm::json::Object{{"meta", llvm::json::Object(ckpt.meta)},
                         {"data_bytes", int64_t(data.size())},
                         {"tensors", std::move(entries)}});
  std::string file(24, '\0');
  std::memcpy(&file[0], "STRATACK", 8);
  endian::write32le(&file[8], kCheckpointVersion);
  endian::write32le(&file[12], crc(header.data(), header.size()));
  endian::write64le(&file[16], header.size());
  file += header;
  file.resize((file.size() + 63) / 64 * 64, '\0');
  std::ofstream(path, std::ios::binary) << file << data;
}

TEST_F(RunSafety, CheckpointWithNanWeightIsRefusedByResumeAndGenerate) {
  spec();
  ASSERT_EQ(strata(train({"--steps", "2"})).rc, 0);
  std::string path = out() + "/checkpoint.bin";
  auto ckpt = loadCheckpoint(path);
  ASSERT_TRUE(bool(ckpt)) << llvm::toString(ckpt.takeError());
  HostTensor &w = ckpt->tensors[0].tensor;
  w.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  writeCheckpointBytes(path, *ckpt);
  std::string expected = "tensor '" + ckpt->tensors[0].name +
                         "' holds a non-finite value (nan at element 1)";
  Result resumed = strata(train({"--resume", "--steps", "3"}));
  EXPECT_EQ(resumed.rc, 1);
  EXPECT_NE(resumed.err.find(expected), std::string::npos) << resumed.err;
  Result generated = strata({"generate", path, "--tokens", "5"});
  EXPECT_NE(generated.rc, 0);
  EXPECT_NE(generated.err.find(expected), std::string::npos) << generated.err;
}

// SIGTERM (as a scheduler sends it) and SIGINT (Ctrl-C) end the run after
// its current step with a checkpoint of that step, exit 143 / 130, and the
// run resumes from there.
TEST_F(RunSafety, SignalsSaveTheRunAndExitWithTheUsualCodes) {
  spec();
  for (auto [sig, code] : {std::pair{SIGTERM, 143}, std::pair{SIGINT, 130}}) {
    llvm::sys::fs::remove_directories(out());
    Result r = interrupt(train({"--steps", "100000", "--log-every", "1"}), sig,
                         [&] { return lossSteps().size() >= 2; });
    EXPECT_EQ(r.rc, code) << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.err, m,
        std::regex("stopped by SIG(TERM|INT) after step ([0-9]+); saved ")))
        << r.err;
    int stoppedAt = std::stoi(m[2]);
    EXPECT_EQ(checkpointStep(), stoppedAt);
    EXPECT_EQ(int(lossSteps().size()), stoppedAt);
    Result resumed =
        strata(train({"--resume", "--steps", std::to_string(stoppedAt + 2)}));
    EXPECT_EQ(resumed.rc, 0) << resumed.err;
    EXPECT_EQ(int(lossSteps().size()), stoppedAt + 2);
  }
}

TEST_F(RunSafety, PreviousRunInOutIsNeverSilentlyReplaced) {
  spec();
  ASSERT_EQ(strata(train({"--steps", "2"})).rc, 0);
  std::string before = read(out() + "/checkpoint.bin");
  Result again = strata(train({"--steps", "2"}));
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(
      again.err.find("strata train: error: " + out() +
                     ": holds a previous run (checkpoint.bin, "
                     "metrics.jsonl); pass --resume to continue it, "
                     "--overwrite to replace it, or choose another --out"),
      std::string::npos)
      << again.err;
  EXPECT_EQ(read(out() + "/checkpoint.bin"), before);
  Result both = strata(train({"--resume", "--overwrite"}));
  EXPECT_EQ(both.rc, 1);
  EXPECT_NE(both.err.find("--resume and --overwrite exclude each other"),
            std::string::npos)
      << both.err;
  Result replaced = strata(train({"--steps", "3", "--overwrite"}));
  EXPECT_EQ(replaced.rc, 0) << replaced.err;
  EXPECT_EQ(checkpointStep(), 3);
  EXPECT_EQ(lossSteps(), (std::vector<int>{0, 1, 2}));
}

// A run killed after its checkpoint (step 2) had logged steps 2 and 3: the
// resumed run replaces those lines instead of appending duplicates, and the
// next write removes the killed writer's temporary checkpoint.
TEST_F(RunSafety, ResumeCutsMetricsBackToTheCheckpoint) {
  spec();
  ASSERT_EQ(strata(train({"--steps", "2"})).rc, 0);
  {
    std::ofstream m(out() + "/metrics.jsonl", std::ios::app);
    m << "{\"loss\":99,\"lr\":1,\"step\":2}\n"
         "{\"loss\":99,\"lr\":1,\"step\":3}\n";
    std::ofstream(out() + "/checkpoint.bin.tmp.999999999") << "half";
  }
  Result r = strata(train({"--resume", "--steps", "4"}));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(lossSteps(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(read(out() + "/metrics.jsonl").find("\"loss\":99"),
            std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists(out() + "/checkpoint.bin.tmp.999999999"));
}

TEST_F(RunSafety, ResumeWithAChangedModelNamesTheFields) {
  spec();
  ASSERT_EQ(strata(train({"--steps", "2"})).rc, 0);
  Result r = strata(train({"--resume", "--dropout", "0.2", "--batch", "2"}));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("the checkpoint was trained with a different "
                       "micro_batch, dropout (resume with the spec"),
            std::string::npos)
      << r.err;
  Result schedule = strata(
      train({"--resume", "--steps", "3", "--warmup", "0", "--min-lr", "1e-4"}));
  EXPECT_EQ(schedule.rc, 0) << schedule.err;
  EXPECT_NE(schedule.err.find(
                "strata train: note: resuming with a changed training.min_lr"),
            std::string::npos)
      << schedule.err;
  EXPECT_NE(schedule.err.find(
                "strata train: note: resuming with a changed training.warmup"),
            std::string::npos)
      << schedule.err;
  EXPECT_NE(schedule.err.find("strata train: note: resuming with a changed "
                              "training.steps (the cosine decay follows "
                              "steps: decay_iters is 0)"),
            std::string::npos)
      << schedule.err;
}

// hidden 1048576 has ~1.3e13 parameters: refused from the parameter count in
// seconds, before any tensor exists, with what it needs and what there is.
TEST_F(RunSafety, ModelLargerThanMemoryIsRefusedBeforeAllocating) {
  std::ofstream(dir_.path("spec.textproto"))
      << "name: \"huge\" family: GPT vocab_size: 1 hidden: 1048576 layers: 1 "
         "heads: 4 seq_len: 8 micro_batch: 1\n";
  Result r = strata(train());
  EXPECT_EQ(r.rc, 1);
  EXPECT_LT(r.seconds, 60);
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("the run needs at least [0-9.]+ GiB of host memory "
                        "\\([0-9.]+ GiB for the parameters, gradients and "
                        "AdamW moments of [0-9]+ parameters, .*\\) but "
                        "[0-9.]+ GiB are available on this machine")))
      << r.err;
}

// 4096 tensor- or data-parallel devices of a 4-head model with 4 sequences
// per microbatch: refused at once by the layout check, no device created.
TEST_F(RunSafety, ImpossibleLayoutFailsBeforeCreatingDevices) {
  spec();
  Result tp = strata(train({"--tp", "4096"}));
  EXPECT_EQ(tp.rc, 1);
  EXPECT_LT(tp.seconds, 30);
  EXPECT_NE(tp.err.find("attention heads 4 (layers.0.attn) not divisible by "
                        "tp 4096"),
            std::string::npos)
      << tp.err;
  // micro_batch is per data-parallel rank, so any dp divides the batch:
  // what stops dp 4096 is the device count.
  Result dp = strata(train({"--dp", "4096"}));
  EXPECT_EQ(dp.rc, 1);
  EXPECT_LT(dp.seconds, 30);
  EXPECT_NE(dp.err.find("4096 devices in one process (tp x dp x pp) exceed "
                        "the "),
            std::string::npos)
      << dp.err;
}

// Under `strata launch`, SIGTERM to the launcher reaches every rank; the
// ranks agree on the step to stop after, save one checkpoint, and the job
// exits 143.
TEST_F(RunSafety, LaunchedJobSavesOnSigterm) {
  spec();
  std::vector<std::string> args = {
      "launch", "--nproc", "2", "--master-port", "0", "--", "strata"};
  for (std::string &a :
       train({"--tp", "2", "--steps", "100000", "--log-every", "1"}))
    args.push_back(a);
  Result r = interrupt(args, SIGTERM, [&] { return lossSteps().size() >= 2; });
  EXPECT_EQ(r.rc, 143) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex("\\[rank 0\\] strata train: stopped by SIGTERM after step "
                 "([0-9]+); saved ")))
      << r.err;
  EXPECT_EQ(checkpointStep(), std::stoi(m[1]));
}

// A rank stopped with SIGSTOP 3 s into the job sends no more heartbeats: the
// launcher names it and ends every rank after --heartbeat-timeout, long
// before the collectives' own timeout (300 s).
TEST_F(RunSafety, StoppedRankEndsTheLaunchedJob) {
  spec();
  std::string cmd = "if [ $RANK = 1 ]; then (sleep 3; kill -STOP $$) & fi; "
                    "exec " STRATA_BIN;
  for (std::string &a : train({"--tp", "2", "--steps", "100000"}))
    cmd += " " + a;
  Result r = strata({"launch", "--nproc", "2", "--master-port", "0",
                     "--heartbeat-timeout", "3", "--grace", "2", "--", "sh",
                     "-c", cmd});
  EXPECT_NE(r.rc, 0);
  EXPECT_LT(r.seconds, 30);
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("strata launch: error: rank 1 \\(pid [0-9]+\\) sent "
                        "no heartbeat for 3 s \\(stopped or hung\\); "
                        "stopping every rank")))
      << r.err;
}

// Ranks started without `strata launch` (as torchrun or srun start them)
// watch each other through the rendezvous store (runtime/comm/Heartbeat.h).
// A rank stopped with SIGSTOP once training runs is named by its peer
// within STRATA_HEARTBEAT_TIMEOUT, long before the collectives' own timeout
// (300 s), and every rank exits: the peer at once, the stopped rank once it
// runs again and finds its peer gone. Stopping rank 1 exercises the
// neighbour's watch, stopping rank 0 the store that stops answering.
class StoppedRankWithoutLaunch : public RunSafety,
                                 public ::testing::WithParamInterface<int> {};

TEST_P(StoppedRankWithoutLaunch, PeerNamesItAndEveryRankExits) {
  const int stopped = GetParam(), peer = 1 - stopped;
  spec();
  std::vector<std::string> args =
      train({"--tp", "2", "--steps", "100000", "--log-every", "1"});
  int port = freeLoopbackPort();
  ASSERT_GT(port, 0);
  llvm::sys::ProcessInfo pi[2];
  std::string errFile[2];
  for (int rank = 0; rank < 2; ++rank) {
    pi[rank] = startRank(rank, port, args, errFile[rank]);
    ASSERT_GT(pi[rank].Pid, 0);
  }
  auto t0 = std::chrono::steady_clock::now();
  while (lossSteps().size() < 2 && since(t0) < 90)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_GE(lossSteps().size(), 2u) << read(errFile[0]) << read(errFile[1]);
  ::kill(pi[stopped].Pid, SIGSTOP);
  auto stoppedAt = std::chrono::steady_clock::now();
  pi[peer] = llvm::sys::Wait(pi[peer], /*SecondsToWait=*/120,
                             /*WaitUntilTerminates=*/false);
  double detectedAfter = since(stoppedAt);
  ::kill(pi[stopped].Pid, SIGCONT);
  // A timed Wait kills a child still running when the time is up and then
  // returns pid -1 (LLVM 14): nothing is left behind, and its pid must not
  // reach kill() (-1 is every process).
  pi[stopped] = llvm::sys::Wait(pi[stopped], /*SecondsToWait=*/60,
                                /*WaitUntilTerminates=*/false);
  // 5 s of silence, plus a beat and a busy machine (sanitizers, 2 cores).
  EXPECT_LT(detectedAfter, 20);
  EXPECT_EQ(pi[peer].ReturnCode, 1);
  EXPECT_NE(pi[stopped].ReturnCode, 0);
  EXPECT_NE(pi[stopped].ReturnCode, -2) << "the stopped rank did not exit";
  std::string why =
      stopped == 1
          ? "rank 1 sent no heartbeat for 5 s \\(stopped or hung; seen by "
            "rank 0\\); stopping this rank"
          : "rank 0 \\(the host of the rendezvous store\\) did not answer "
            "for 5 s \\(stopped or hung; seen by rank 1\\); stopping this "
            "rank";
  EXPECT_TRUE(std::regex_search(read(errFile[peer]),
                                std::regex("strata train: error: " + why)))
      << read(errFile[peer]);
}

INSTANTIATE_TEST_SUITE_P(RunSafety, StoppedRankWithoutLaunch,
                         ::testing::Values(1, 0));

// Ranks started with different layouts (rank 0 with --tp 2, rank 1 with
// --dp 2: two devices each) are told so at once; before, each waited for
// groups the other never joined until the collectives' timeout (300 s).
// Rank 1 names both layouts; rank 0 ends when rank 1 exits (its will).
TEST_F(RunSafety, RanksStartedWithDifferentLayoutsAreToldAtOnce) {
  spec();
  int port = freeLoopbackPort();
  ASSERT_GT(port, 0);
  llvm::sys::ProcessInfo pi[2];
  std::string errFile[2];
  const char *layout[2][2] = {{"--tp", "2"}, {"--dp", "2"}};
  auto t0 = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 2; ++rank) {
    pi[rank] = startRank(rank, port, train({layout[rank][0], layout[rank][1]}),
                         errFile[rank]);
    ASSERT_GT(pi[rank].Pid, 0);
  }
  // Timed Waits kill what still runs after 120 s and return pid -1.
  for (llvm::sys::ProcessInfo &p : pi)
    p = llvm::sys::Wait(p, /*SecondsToWait=*/120,
                        /*WaitUntilTerminates=*/false);
  EXPECT_LT(since(t0), 60); // a busy machine (sanitizers, 2 cores)
  EXPECT_EQ(pi[1].ReturnCode, 1);
  EXPECT_NE(
      read(errFile[1])
          .find("strata train: error: cannot train on tp=1 dp=2: rank 1 runs "
                "mesh<dp=2,tp=1> on cpu but rank 0 runs mesh<dp=1,tp=2> on "
                "cpu (every process of a job needs the same --tp, --dp, --pp "
                "and --device)"),
      std::string::npos)
      << read(errFile[1]);
  EXPECT_EQ(pi[0].ReturnCode, 1);
  EXPECT_NE(read(errFile[0]).find("rank 1 exited"), std::string::npos)
      << read(errFile[0]);
}

} // namespace
} // namespace strata
