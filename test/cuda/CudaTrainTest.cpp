//===- CudaTrainTest.cpp - Training on the CUDA backend in interpret mode -===//
//
// `strata train --device cuda-interpret` runs every op of a GPT and a
// Llama training step (forward, backward, AdamW, fused kernels, GEMMs) as
// CUDA kernels in interpret mode; its losses, gradient norms and validation
// loss match `--device cpu`, and checkpoints move between the devices: a
// run saved on one resumes on the other with the next losses of the
// uninterrupted run; parallel layouts verify against the serial CPU plan.
// Tolerance 1e-5 relative: the kernels round some f32
// sums in other orders than the CPU's (seen: bitwise equal for these
// models today).
//
//===----------------------------------------------------------------------===//
#include "test/cuda/TextDirTest.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <unistd.h>

namespace strata {
namespace {

class CudaTrain : public test::TextDirTest {
protected:
  /// Runs `strata train` with `args`; its stderr on failure.
  std::string train(std::vector<std::string> args) {
    args.insert(args.end(), {"--sample", "0", "--eval-iters", "2"});
    return strata("train", args);
  }

  /// Runs `strata VERB args` (with `env` added to the environment); its
  /// stderr on failure.
  std::string strata(const char *verb, std::vector<std::string> args,
                     const std::string &env = "") {
    args.insert(args.begin(), {STRATA_BIN, verb});
    std::vector<llvm::StringRef> argv(args.begin(), args.end());
    std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    llvm::Optional<llvm::StringRef> redirects[] = {
        llvm::None, llvm::StringRef(out), llvm::StringRef(err)};
    llvm::Optional<llvm::ArrayRef<llvm::StringRef>> envp;
    std::vector<std::string> vars;
    std::vector<llvm::StringRef> refs;
    if (!env.empty()) {
      for (char **e = environ; *e; ++e)
        vars.push_back(*e);
      vars.push_back(env);
      refs.assign(vars.begin(), vars.end());
      envp = llvm::ArrayRef<llvm::StringRef>(refs);
    }
    int code = llvm::sys::ExecuteAndWait(STRATA_BIN, argv, envp, redirects,
                                         /*secondsToWait=*/240);
    return code == 0 ? "" : "exit " + std::to_string(code) + ": " + read(err);
  }

  /// Every `key` of a run's metrics.jsonl, in order.
  std::vector<double> metric(const std::string &out, const std::string &key) {
    std::string text = read(out + "/metrics.jsonl");
    std::regex re("\"" + key + "\":([-0-9.eE+]+)");
    std::vector<double> v;
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end;
         ++it)
      v.push_back(std::stod((*it)[1]));
    return v;
  }

  void expectClose(const std::vector<double> &got,
                   const std::vector<double> &want, const std::string &what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    ASSERT_FALSE(want.empty()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(std::abs(got[i] - want[i]), 1e-5 * std::abs(want[i]))
          << what << " " << i << ": cuda-interpret " << got[i] << ", cpu "
          << want[i];
  }

  /// A small spec of `family` on the test's text.
  std::string spec(const std::string &family) {
    std::string path = dir_ + "/" + family + ".textproto";
    std::ofstream s(path);
    s << "name: \"m\" family: " << family
      << " vocab_size: 30 make_vocab_size_divisible_by: 16 hidden: 32 "
         "layers: 2 heads: 4 seq_len: 16 micro_batch: 4 dropout: 0.1\n"
      << (family == "LLAMA" ? "kv_heads: 2 ffn: 64\n" : "") << "data { path: \""
      << dir_ << "/text.txt\" }\n"
      << "training { steps: 4 lr: 1e-2 min_lr: 1e-3 warmup: 1 "
         "decay_iters: 4 eval_every: 4 seed: 3 grad_clip: 1.0 }\n";
    return path;
  }
};

TEST_F(CudaTrain, GptAndLlamaLossesMatchTheCpuDevice) {
  for (const std::string family : {"GPT", "LLAMA"}) {
    SCOPED_TRACE(family);
    std::string s = spec(family), cpu = dir_ + "/cpu-" + family,
                cuda = dir_ + "/cuda-" + family;
    ASSERT_EQ(train({s, "--out", cpu}), "");
    ASSERT_EQ(train({s, "--out", cuda, "--device", "cuda-interpret"}), "");
    for (const char *key : {"loss", "grad_norm", "val_loss"})
      expectClose(metric(cuda, key), metric(cpu, key), key);
  }
}

// Saved on cuda-interpret after 2 steps, resumed on the CPU (and the other
// way round): steps 2 and 3 are those of the uninterrupted CPU run.
TEST_F(CudaTrain, CheckpointsMoveBetweenDevices) {
  std::string s = spec("GPT"), whole = dir_ + "/whole";
  ASSERT_EQ(train({s, "--out", whole}), "");
  std::vector<double> want = metric(whole, "loss");
  ASSERT_EQ(want.size(), 4u);
  for (auto [first, second] : {std::pair{"cuda-interpret", "cpu"},
                               std::pair{"cpu", "cuda-interpret"}}) {
    std::string out = dir_ + "/" + first;
    ASSERT_EQ(train({s, "--out", out, "--steps", "2", "--device", first}), "");
    ASSERT_EQ(train({s, "--out", out, "--resume", "--device", second}), "");
    std::vector<double> got = metric(out, "loss");
    expectClose(got, want, std::string(first) + " then " + second);
  }
}

// Greedy generation from a trained checkpoint on cuda-interpret prints the
// CPU's text (the graph decoder there, the key/value cache on the CPU).
TEST_F(CudaTrain, GenerateOnTheDeviceMatchesTheCpu) {
  std::string out = dir_ + "/gen";
  ASSERT_EQ(train({spec("GPT"), "--out", out}), "");
  std::string text[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(strata("generate", {out + "/checkpoint.bin", "--prompt", "to be",
                                  "--tokens", "12", "--temperature", "0",
                                  "--device", i ? "cuda-interpret" : "cpu"}),
              "");
    text[i] = read(dir_ + "/stdout");
  }
  EXPECT_FALSE(text[0].empty());
  EXPECT_EQ(text[1], text[0]);
}

// A plan larger than the device's free memory is refused before the first
// step, naming both sizes.
TEST_F(CudaTrain, APlanOverTheDeviceMemoryIsRefusedBeforeItRuns) {
  std::string e = strata(
      "train",
      {spec("GPT"), "--out", dir_ + "/oom", "--device", "cuda-interpret"},
      "STRATA_INTERPRET_MEMORY=200KiB");
  EXPECT_NE(e.find("free, and the plan needs"), std::string::npos) << e;
  EXPECT_FALSE(llvm::sys::fs::exists(dir_ + "/oom/checkpoint.bin"));

  // Room for the plan's peak but not for the device's own workspace (the
  // 32 MiB cuBLASLt workspace among it) is refused too, naming both.
  size_t at = e.find("the plan needs ");
  ASSERT_NE(at, std::string::npos) << e;
  double peak = std::stod(e.substr(at + 15));
  std::string unit = e.substr(e.find(' ', at + 15) + 1, 3);
  ASSERT_TRUE(unit == "KiB" || unit == "MiB") << e;
  int64_t peakBytes = int64_t(peak * (unit == "KiB" ? 1024 : 1 << 20)) + 1;
  std::string e2 = strata(
      "train",
      {spec("GPT"), "--out", dir_ + "/oom2", "--device", "cuda-interpret"},
      "STRATA_INTERPRET_MEMORY=" + std::to_string(peakBytes + (16 << 20)));
  EXPECT_NE(e2.find("of the device's own workspace"), std::string::npos) << e2;
  EXPECT_FALSE(llvm::sys::fs::exists(dir_ + "/oom2/checkpoint.bin"));
}

// Parallel layouts on cuda-interpret devices (collectives by interpret
// mode's NCCL, docs/multi-gpu.md) against the serial plan on one CPU device,
// tensor by tensor:
// Megatron tp with sp over a 2-stage 1F1B pipeline, and tp x dp, with
// dropout on split activations (each block draws its global indices' mask).
TEST_F(CudaTrain, ParallelLayoutsVerifyAgainstTheCpu) {
  EXPECT_EQ(strata("verify", {spec("LLAMA"), "--tp", "2", "--sp", "--pp", "2",
                              "--microbatches", "2", "--schedule", "1f1b",
                              "--steps", "1", "--device", "cuda-interpret"}),
            "");
  EXPECT_EQ(strata("verify", {spec("GPT"), "--tp", "2", "--dp", "2",
                              "--distributed-optimizer", "--steps", "1",
                              "--device", "cuda-interpret"}),
            "");
}

} // namespace
} // namespace strata
