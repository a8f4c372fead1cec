//===- LaunchTest.cpp - `strata launch`, multi-process training, verify ---===//
//
// Runs the strata binary: the launcher's environment and output prefixes, a
// failing rank stopping the job quickly with its exit code, a 2-process
// training job on loopback giving bitwise the losses of the same layout run
// in one process (both reduce in rank order; see runtime/comm), the verify
// verb's report and exit codes, pipelined verify and train, and pipelined
// and ZeRO-1 jobs of several processes matching the serial run and resuming
// in another layout.
//
//===----------------------------------------------------------------------===//
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include <chrono>
#include <fstream>
#include <regex>

namespace strata {
namespace {

struct Result {
  int code;
  std::string out, err;
  double seconds;
};

class LaunchTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> d;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("strata-launch", d));
    dir_ = std::string(d);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir_); }

  std::string read(const std::string &path) {
    auto b = llvm::MemoryBuffer::getFile(path);
    return b ? (*b)->getBuffer().str() : "";
  }

  Result strata(std::vector<std::string> args) {
    args.insert(args.begin(), STRATA_BIN);
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    llvm::Optional<llvm::StringRef> redirects[] = {
        llvm::None, llvm::StringRef(out), llvm::StringRef(err)};
    auto t0 = std::chrono::steady_clock::now();
    int code =
        llvm::sys::ExecuteAndWait(STRATA_BIN, argv, llvm::None, redirects,
                                  /*secondsToWait=*/120);
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    return {code, read(out), read(err), s};
  }

  /// The "loss" of every line of a run's metrics.jsonl, as printed.
  std::vector<std::string> losses(const std::string &outDir) {
    std::string text = read(outDir + "/metrics.jsonl");
    std::regex re("\"loss\":([-0-9.eE+]+)");
    std::vector<std::string> l;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end;
         ++it)
      l.push_back((*it)[1]);
    return l;
  }

  /// The training text of the tests' specs.
  void writeText() {
    std::ofstream d(dir_ + "/text.txt");
    for (int i = 0; i < 300; ++i)
      d << "to be or not to be, that is the question " << i << "\n";
  }

  /// A 2-block GPT spec with dropout, `extra` added to its training section,
  /// and its data.
  std::string writeGpt(const std::string &extra = "") {
    writeText();
    std::ofstream s(dir_ + "/gpt.textproto");
    s << R"(name: "g" family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
hidden: 16 layers: 2 heads: 4 seq_len: 8 micro_batch: 4 dropout: 0.1
training { steps: 3 lr: 1e-2 min_lr: 1e-3 warmup: 1 eval_every: 0 seed: 3 grad_clip: 1.0 )"
      << extra << " }\n";
    return dir_ + "/gpt.textproto";
  }

  /// A tiny Llama spec with dropout and gradient accumulation, and its data.
  std::string writeSpec() {
    writeText();
    std::ofstream s(dir_ + "/spec.textproto");
    s << R"(name: "t" family: LLAMA vocab_size: 1 make_vocab_size_divisible_by: 16
hidden: 16 layers: 1 heads: 4 kv_heads: 2 ffn: 32 seq_len: 8 micro_batch: 4 dropout: 0.1
training { steps: 4 lr: 1e-2 min_lr: 1e-3 warmup: 1 grad_accum: 2 eval_every: 0 seed: 3 grad_clip: 1.0 }
)";
    return dir_ + "/spec.textproto";
  }

  std::string dir_;
};

TEST_F(LaunchTest, SetsTorchrunVariablesAndPrefixesOutput) {
  Result r = strata(
      {"launch", "--nproc", "2", "--master-port", "0", "--", "sh", "-c",
       "echo $RANK/$WORLD_SIZE $LOCAL_RANK/$LOCAL_WORLD_SIZE $MASTER_ADDR; "
       "echo oops >&2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank 0] 0/2 0/2 127.0.0.1\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[rank 1] 1/2 1/2 127.0.0.1\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("[rank 1] oops\n"), std::string::npos) << r.err;
}

// Rank 1 fails; ranks 0 and 2 would sleep for a minute but are stopped.
TEST_F(LaunchTest, FailingRankStopsTheJob) {
  Result r = strata({"launch", "--nproc", "3", "--master-port", "0", "--", "sh",
                     "-c", "if [ $RANK = 1 ]; then exit 3; fi; sleep 60"});
  EXPECT_EQ(r.code, 3);
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_NE(r.err.find("rank 1 exited with code 3; stopped the other ranks"),
            std::string::npos)
      << r.err;
}

// A strata rank that fails at start (bad data path) while rank 0 waits for
// it at the rendezvous: the job ends at once with rank 1's error.
TEST_F(LaunchTest, FailingTrainingRankStopsTheJob) {
  std::string spec = writeSpec();
  std::string cmd = std::string("exec ") + STRATA_BIN + " train " + spec +
                    " --tp 2 --sample 0 --out " + dir_ + "/out --data " + dir_ +
                    "/$([ $RANK = 1 ] && echo missing.txt || echo text.txt)";
  Result r = strata(
      {"launch", "--nproc", "2", "--master-port", "0", "--", "sh", "-c", cmd});
  EXPECT_NE(r.code, 0);
  EXPECT_LT(r.seconds, 30.0);
  EXPECT_NE(r.err.find("[rank 1] "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing.txt"), std::string::npos) << r.err;
}

TEST_F(LaunchTest, TwoProcessesTrainLikeOneProcess) {
  std::string spec = writeSpec();
  std::vector<std::string> train = {"train", spec, "--data", dir_ + "/text.txt",
                                    "--tp",  "2",  "--sp",   "--sample",
                                    "0"};
  auto with = [&](std::vector<std::string> pre, const std::string &out) {
    pre.insert(pre.end(), train.begin(), train.end());
    pre.push_back("--out");
    pre.push_back(dir_ + "/" + out);
    return pre;
  };
  Result mp = strata(with(
      {"launch", "--nproc", "2", "--master-port", "0", "--", "strata"}, "mp"));
  ASSERT_EQ(mp.code, 0) << mp.err;
  EXPECT_NE(mp.out.find("[rank 0] training t "), std::string::npos) << mp.out;
  EXPECT_NE(mp.out.find("rank 0 of 2 processes"), std::string::npos) << mp.out;
  EXPECT_EQ(mp.out.find("[rank 1]"), std::string::npos)
      << "only rank 0 reports";
  Result ip = strata(with({}, "ip"));
  ASSERT_EQ(ip.code, 0) << ip.err;
  std::vector<std::string> a = losses(dir_ + "/mp"), b = losses(dir_ + "/ip");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[3]);

  // The device count must be tp*dp.
  Result bad = strata(with(
      {"launch", "--nproc", "3", "--master-port", "0", "--", "strata"}, "bad"));
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(
      bad.err.find("WORLD_SIZE=3 processes for mesh<dp=1,tp=2> of 2 devices"),
      std::string::npos)
      << bad.err;
}

TEST_F(LaunchTest, VerifyReportsEveryTensorAndFailsOnBadLayouts) {
  std::ofstream s(dir_ + "/gpt.textproto");
  s << R"(name: "g" family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
hidden: 16 layers: 2 heads: 4 seq_len: 8 micro_batch: 4 dropout: 0.1
)";
  s.close();
  Result ok = strata({"verify", dir_ + "/gpt.textproto", "--tp", "2", "--dp",
                      "2", "--sp", "--distributed-optimizer", "--steps", "3"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("vs tp=2 dp=2 sp distributed-optimizer (4 CPU "
                        "devices), 3 AdamW steps"),
            std::string::npos)
      << ok.out;
  EXPECT_NE(ok.out.find("  grad.layers.0.mlp.fc1.w "), std::string::npos)
      << ok.out;
  EXPECT_NE(ok.out.find("  step 3 loss "), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("  step 1 adam_m.wte "), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("OK: 112 tensors match within 1e-05"),
            std::string::npos)
      << ok.out;

  Result bad = strata({"verify", dir_ + "/gpt.textproto", "--tp", "3"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("gpt.textproto: megatron-seeds: attention heads 4 "
                         "(layers.0.attn) not divisible by tp 3"),
            std::string::npos)
      << bad.err;

  // A plan brings its layout, a pipelined one included.
  std::string plan = dir_ + "/gpt.plan";
  ASSERT_EQ(strata({"compile", dir_ + "/gpt.textproto", "--tp", "2", "--dp",
                    "2", "-o", plan})
                .code,
            0);
  Result fromPlan = strata({"verify", plan, "--steps", "1"});
  EXPECT_EQ(fromPlan.code, 0) << fromPlan.err;
  EXPECT_NE(fromPlan.out.find("vs tp=2 dp=2 (4 CPU devices)"),
            std::string::npos)
      << fromPlan.out;
  ASSERT_EQ(
      strata({"compile", dir_ + "/gpt.textproto", "--pp", "2", "-o", plan})
          .code,
      0);
  Result piped = strata({"verify", plan, "--steps", "1"});
  EXPECT_EQ(piped.code, 0) << piped.err;
  EXPECT_NE(piped.out.find("vs tp=1 dp=1 pp=2 1f1b microbatches=1 "
                           "recompute=none (2 CPU devices)"),
            std::string::npos)
      << piped.out;

  // A tolerance below f32 rounding makes the first differing tensor fail.
  Result strict = strata(
      {"verify", dir_ + "/gpt.textproto", "--tp", "2", "--tolerance", "1e-12"});
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.err.find("diverges: relative difference"), std::string::npos)
      << strict.err;
  EXPECT_NE(strict.out.find("DIVERGES"), std::string::npos) << strict.out;
}

// `strata verify` and `strata train` of pipelined layouts: verify reports
// every tensor within tolerance, training on 8 devices gives the serial
// run's losses (gradient accumulation over the same microbatches), so does
// a plan compiled with those flags, and a configuration that does not fit
// fails before any file is written.
// gpt_tiny's shapes at micro batch 1 with tp 2 and selective recompute: the
// key bias's gradient is analytically zero and computed as rounding noise of
// about 1e-5 of the largest gradient, which verify must treat as zero (it
// failed at 1.05e-5 > 1e-5 when the zero floor was 1e-5).
TEST_F(LaunchTest, VerifyTreatsAnalyticallyZeroGradientsAsZero) {
  std::ofstream(dir_ + "/text.txt")
      << "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ\n";
  std::ofstream(dir_ + "/gpt.textproto")
      << "name: \"g\" family: GPT vocab_size: 65 hidden: 128 layers: 4 "
         "heads: 4 seq_len: 64 micro_batch: 1 dropout: 0\n";
  Result r = strata({"verify", dir_ + "/gpt.textproto", "--tp", "2",
                     "--recompute", "selective"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("tolerance 1e-05 (tensors below 1e-03 of their group's "
                       "largest element are numerically zero and compared "
                       "against that floor)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  grad.layers.1.attn.k.b "), std::string::npos)
      << r.out;
}

TEST_F(LaunchTest, PipelinedVerifyAndTrainMatchSerial) {
  std::string spec = writeGpt();
  Result v =
      strata({"verify", spec, "--pp", "2", "--schedule", "1f1b", "--recompute",
              "selective", "--microbatches", "4", "--steps", "2"});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("vs tp=1 dp=1 pp=2 1f1b microbatches=4 "
                       "recompute=selective (2 CPU devices), 2 AdamW steps"),
            std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find("  grad.wte "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("OK: 111 tensors match within 1e-05"), std::string::npos)
      << v.out;

  std::vector<std::string> common = {
      "train", spec, "--data", dir_ + "/text.txt", "--sample", "0"};
  auto run = [&](std::vector<std::string> extra, const std::string &out) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--out");
    a.push_back(dir_ + "/" + out);
    return strata(a);
  };
  Result pipe = run({"--tp", "2", "--pp", "2", "--dp", "2", "--microbatches",
                     "4", "--schedule", "1f1b", "--recompute", "selective"},
                    "pipe");
  ASSERT_EQ(pipe.code, 0) << pipe.err;
  EXPECT_NE(pipe.out.find("on 8 CPU devices (tp=2 dp=2 pp=2, 1f1b over 4 "
                          "microbatches, recompute selective)"),
            std::string::npos)
      << pipe.out;
  // A plan compiled with the same flags runs its stored programs (not a
  // recompilation of its spec) to the same losses.
  std::string plan = dir_ + "/pipe.plan";
  ASSERT_EQ(strata({"compile", spec, "--tp", "2", "--pp", "2", "--dp", "2",
                    "--microbatches", "4", "--schedule", "1f1b", "--recompute",
                    "selective", "-o", plan})
                .code,
            0);
  std::vector<std::string> fromPlan = {
      "train",    plan, "--data", dir_ + "/text.txt",
      "--sample", "0",  "--out",  dir_ + "/plan"};
  Result planned = strata(fromPlan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  EXPECT_NE(planned.out.find("on 8 CPU devices (tp=2 dp=2 pp=2, 1f1b over 4 "
                             "microbatches, recompute selective; the plan's "
                             "compiled programs)"),
            std::string::npos)
      << planned.out;
  EXPECT_EQ(losses(dir_ + "/plan"), losses(dir_ + "/pipe"));

  // micro_batch (4) is per data-parallel rank: the dp 2 job's microbatch
  // holds 8 sequences, which one device takes as --micro-batch 8.
  Result serial = run({"--grad-accum", "4", "--micro-batch", "8"}, "serial");
  ASSERT_EQ(serial.code, 0) << serial.err;
  std::vector<std::string> a = losses(dir_ + "/pipe"),
                           b = losses(dir_ + "/serial");
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) // Verify.cpp's f32 tolerance
    EXPECT_NEAR(std::stod(a[i]), std::stod(b[i]), 1e-5 * std::stod(b[i]))
        << "step " << i + 1;

  Result bad =
      run({"--pp", "2", "--schedule", "interleaved:2", "--microbatches", "3"},
          "bad");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("microbatches must be a multiple of 2 (got 3"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(llvm::sys::fs::exists(dir_ + "/bad"));
  Result deep = run({"--pp", "4"}, "deep");
  EXPECT_EQ(deep.code, 1);
  EXPECT_NE(deep.err.find("4 pipeline stages (pp=4, 1f1b) need at least one "
                          "block each, but the model has 2"),
            std::string::npos)
      << deep.err;
}

// Pipelined jobs of several processes (one rank each): pp 2 x tp 2 and
// pp 2 x dp 2 with the distributed optimizer give the serial run's losses
// (the same microbatches accumulated), and the pp 2 x tp 2 checkpoint
// resumed on one device continues with the serial run's next losses.
TEST_F(LaunchTest, PipelinedJobsMatchSerialAndResumeInAnotherLayout) {
  writeGpt("grad_accum: 2");
  auto train = [&](std::vector<std::string> pre, std::vector<std::string> extra,
                   const std::string &out) {
    std::vector<std::string> a = pre;
    a.insert(a.end(), {"train", dir_ + "/gpt.textproto", "--data",
                       dir_ + "/text.txt", "--sample", "0"});
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back("--out");
    a.push_back(dir_ + "/" + out);
    return strata(a);
  };
  std::vector<std::string> four = {
      "launch", "--nproc", "4", "--master-port", "0", "--", "strata"};
  auto near = [&](const std::string &got, const std::string &want) {
    std::vector<std::string> a = losses(dir_ + "/" + got),
                             b = losses(dir_ + "/" + want);
    ASSERT_EQ(a.size(), b.size()) << got;
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i) // Verify.cpp's f32 tolerance
      EXPECT_NEAR(std::stod(a[i]), std::stod(b[i]), 1e-5 * std::stod(b[i]))
          << got << " step " << i + 1;
  };
  Result serial = train({}, {}, "serial");
  ASSERT_EQ(serial.code, 0) << serial.err;
  Result pptp = train(four, {"--pp", "2", "--tp", "2"}, "pptp");
  ASSERT_EQ(pptp.code, 0) << pptp.err;
  EXPECT_NE(pptp.out.find("on 4 CPU devices (tp=2 dp=1 pp=2, 1f1b over 2 "
                          "microbatches, recompute none), rank 0 of 4 "
                          "processes"),
            std::string::npos)
      << pptp.out;
  near("pptp", "serial");
  // micro_batch is per data-parallel rank: at dp 2 with --micro-batch 2,
  // each microbatch holds the serial run's 4 sequences.
  Result zero = train(four,
                      {"--pp", "2", "--dp", "2", "--distributed-optimizer",
                       "--micro-batch", "2"},
                      "ppzero");
  ASSERT_EQ(zero.code, 0) << zero.err;
  near("ppzero", "serial");

  // Two more steps: the serial run resumed, and the pp 2 x tp 2 run's
  // checkpoint resumed on one device.
  for (const char *out : {"serial", "pptp"}) {
    Result r = train({}, {"--steps", "5", "--resume"}, out);
    ASSERT_EQ(r.code, 0) << out << ": " << r.err;
    EXPECT_NE(r.out.find("resumed at step 3"), std::string::npos) << r.out;
  }
  near("pptp", "serial");
  EXPECT_EQ(losses(dir_ + "/serial").size(), 5u);
}

// `strata train --trace`: a Chrome trace with a process row per rank, each
// pipeline rank's F and B programs of every microbatch and its optimizer per
// traced step, the tp all_reduces inside them with their bytes, and the
// copies; both processes of a launched job write their ranks' rows.
TEST_F(LaunchTest, TraceShowsEveryRanksProgramsCollectivesAndCopies) {
  std::string spec = writeSpec();
  std::ofstream g(dir_ + "/two.textproto");
  g << R"(name: "two" family: GPT vocab_size: 30 hidden: 16 layers: 2 heads: 4
seq_len: 8 micro_batch: 4 training { steps: 3 lr: 1e-2 eval_every: 0 })";
  g.close();
  std::string trace = dir_ + "/t.json";
  Result r = strata({"train",          dir_ + "/two.textproto",
                     "--data",         dir_ + "/text.txt",
                     "--pp",           "2",
                     "--tp",           "2",
                     "--microbatches", "2",
                     "--steps",        "3",
                     "--trace",        trace,
                     "--trace-steps",  "2",
                     "--sample",       "0",
                     "--out",          dir_ + "/traced"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote the step timeline of 2 steps to " + trace),
            std::string::npos)
      << r.out;
  auto json = llvm::json::parse(read(trace));
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *events =
      json->getAsObject()->getArray("traceEvents");
  ASSERT_NE(events, nullptr);
  std::map<int64_t, std::map<std::string, int>> programs; // rank -> name -> n
  std::set<int64_t> named;
  int collectives = 0, copies = 0;
  for (const llvm::json::Value &v : *events) {
    const llvm::json::Object &e = *v.getAsObject();
    int64_t pid = *e.getInteger("pid");
    std::string name = e.getString("name")->str();
    if (*e.getString("ph") == "M") {
      if (name == "process_name")
        named.insert(pid);
      continue;
    }
    llvm::StringRef cat = *e.getString("cat");
    EXPECT_GE(*e.getInteger("dur"), 0);
    if (cat == "program")
      ++programs[pid][name.substr(0, 1)];
    if (cat == "collective") {
      ++collectives;
      EXPECT_GT(*e.getObject("args")->getInteger("bytes"), 0) << name;
    }
    copies += cat == "copy";
  }
  EXPECT_EQ(named, (std::set<int64_t>{0, 1, 2, 3}));
  ASSERT_EQ(programs.size(), 4u);
  for (auto &[rank, byName] : programs) {
    // 2 steps x 2 microbatches of F and B, and 2 optimizer runs.
    EXPECT_EQ(byName["F"], 4) << "rank " << rank;
    EXPECT_EQ(byName["B"], 4) << "rank " << rank;
    EXPECT_EQ(byName["o"], 2) << "rank " << rank;
  }
  EXPECT_GT(collectives, 0);
  EXPECT_GT(copies, 0);

  Result mp = strata({"launch",
                      "--nproc",
                      "2",
                      "--master-port",
                      "0",
                      "--",
                      "strata",
                      "train",
                      spec,
                      "--data",
                      dir_ + "/text.txt",
                      "--tp",
                      "2",
                      "--steps",
                      "2",
                      "--trace",
                      dir_ + "/mp.json",
                      "--sample",
                      "0",
                      "--out",
                      dir_ + "/mp"});
  ASSERT_EQ(mp.code, 0) << mp.err;
  for (std::string f : {"/mp.json", "/mp.json.rank1.json"}) {
    auto j = llvm::json::parse(read(dir_ + f));
    ASSERT_TRUE(bool(j)) << f << ": " << llvm::toString(j.takeError());
  }
  EXPECT_NE(read(dir_ + "/mp.json.rank1.json").find("\"rank 1\""),
            std::string::npos);

  Result bad = strata({"train", spec, "--trace", dir_ + "/no/such/t.json"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("does not exist"), std::string::npos) << bad.err;
}

// `train --init-from`: a new run starts from a checkpoint's weights with
// fresh optimizer state at step 0. The text is one repeated character, so
// every batch is the same and a loss measures only the weights: the first
// loss of a run started from run A's checkpoint equals the next loss of A
// resumed (A's weights on the same batch), and differs from a fresh run's.
TEST_F(LaunchTest, InitFromStartsFromACheckpointsWeights) {
  std::ofstream d(dir_ + "/same.txt");
  d << std::string(4000, 'a');
  d.close();
  std::ofstream s(dir_ + "/g.textproto");
  s << R"(name: "g" family: GPT vocab_size: 30 hidden: 16 layers: 2 heads: 4
seq_len: 8 micro_batch: 4 dropout: 0
training { steps: 3 lr: 1e-2 min_lr: 1e-3 warmup: 1 eval_every: 0 seed: 3 })";
  s.close();
  auto train = [&](std::vector<std::string> extra, const std::string &out) {
    std::vector<std::string> a = {"train",    dir_ + "/g.textproto",
                                  "--data",   dir_ + "/same.txt",
                                  "--sample", "0",
                                  "--out",    dir_ + "/" + out};
    a.insert(a.end(), extra.begin(), extra.end());
    return strata(a);
  };
  ASSERT_EQ(train({}, "a").code, 0);
  std::string ckpt = dir_ + "/a/checkpoint.bin";
  Result b = train({"--init-from", ckpt, "--steps", "2"}, "b");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.out.find("initialized from " + ckpt), std::string::npos) << b.out;
  ASSERT_EQ(train({"--steps", "4", "--resume"}, "a").code, 0);
  std::vector<std::string> a = losses(dir_ + "/a"), bl = losses(dir_ + "/b");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(bl.size(), 2u);
  EXPECT_EQ(bl[0], a[3]) << "A's weights on the same batch";
  EXPECT_NE(bl[0], a[0]) << "not the fresh initialization";

  // Another model's checkpoint is refused, naming the tensor.
  std::ofstream o(dir_ + "/other.textproto");
  o << R"(name: "o" family: GPT vocab_size: 30 hidden: 32 layers: 2 heads: 4
seq_len: 8 micro_batch: 4 training { steps: 3 lr: 1e-2 eval_every: 0 })";
  o.close();
  Result bad =
      strata({"train", dir_ + "/other.textproto", "--data", dir_ + "/same.txt",
              "--init-from", ckpt, "--out", dir_ + "/bad"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find(ckpt + ": tensor 'wte' is missing or is not"),
            std::string::npos)
      << bad.err;
}

} // namespace
} // namespace strata
