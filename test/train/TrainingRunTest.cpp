//===- TrainingRunTest.cpp - Determinism and exact resume of training runs
//-===//
//
// Same seed, same run: two runs give bitwise-identical losses. A run stopped
// after 3 steps and resumed to 6 gives bitwise the losses of an uninterrupted
// 6-step run (with dropout on, so the counter-based masks are covered too).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/TrainingRun.h"
#include "runtime/io/Checkpoint.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <fstream>

namespace strata {
namespace {

class TrainingRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> d;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("strata-run", d));
    dir_ = std::string(d);
    data_ = dir_ + "/text.txt";
    std::ofstream f(data_);
    for (int i = 0; i < 200; ++i)
      f << "the quick brown fox jumps over the lazy dog " << i << "\n";
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir_); }

  RunOptions options(const std::string &out, int64_t steps) {
    RunOptions o;
    pb::ModelSpec &s = o.spec;
    s.set_name("t");
    s.set_family(pb::ModelSpec::LLAMA);
    s.set_vocab_size(1); // replaced by the data's vocabulary
    s.set_make_vocab_size_divisible_by(8);
    s.set_hidden(16);
    s.set_layers(1);
    s.set_heads(2);
    s.set_kv_heads(1);
    s.set_seq_len(8);
    s.set_micro_batch(2);
    s.set_dropout(0.1);
    pb::Training &t = *s.mutable_training();
    t.set_steps(steps);
    t.set_lr(1e-2);
    t.set_min_lr(1e-3);
    t.set_warmup(1);
    t.set_decay_iters(6);
    t.set_grad_accum(2);
    t.set_eval_every(0);
    o.dataPath = data_;
    o.outDir = dir_ + "/" + out;
    o.progressBar = false;
    return o;
  }

  /// Training losses by step from OUT/metrics.jsonl.
  std::vector<double> losses(const std::string &out) {
    std::vector<double> r;
    auto buf = llvm::MemoryBuffer::getFile(dir_ + "/" + out + "/metrics.jsonl");
    EXPECT_TRUE(bool(buf));
    llvm::SmallVector<llvm::StringRef> lines;
    (*buf)->getBuffer().split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines) {
      auto v = llvm::json::parse(line);
      EXPECT_TRUE(bool(v)) << llvm::toString(v.takeError());
      if (auto l = v->getAsObject()->getNumber("loss"))
        r.push_back(*l);
    }
    return r;
  }

  void run(const RunOptions &o) {
    std::string log;
    llvm::raw_string_ostream os(log);
    llvm::Error e = runTraining(o, os);
    ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e)) << "\n" << log;
  }

  std::string dir_, data_;
};

TEST_F(TrainingRunTest, SameSeedSameLossesAndExactResume) {
  run(options("a", 6));
  run(options("b", 6));
  std::vector<double> a = losses("a"), b = losses("b");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, b); // bitwise
  EXPECT_LT(a.back(), a.front());

  run(options("c", 3));
  RunOptions resumed = options("c", 6);
  resumed.resume = true;
  run(resumed);
  EXPECT_EQ(losses("c"), a); // steps 0-2, then 3-5 after the resume, bitwise

  auto ckpt = loadCheckpoint(checkpointPath(dir_ + "/c"));
  ASSERT_TRUE(bool(ckpt)) << llvm::toString(ckpt.takeError());
  EXPECT_EQ(ckpt->meta.getInteger("step").getValueOr(-1), 6);
}

TEST_F(TrainingRunTest, ResumeRejectsAnotherSpec) {
  run(options("d", 2));
  RunOptions other = options("d", 4);
  other.spec.set_hidden(32);
  other.resume = true;
  std::string log;
  llvm::raw_string_ostream os(log);
  llvm::Error e = runTraining(other, os);
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_NE(msg.find("the checkpoint was trained with a different hidden ("),
            std::string::npos)
      << msg;
}

TEST_F(TrainingRunTest, MissingDataNamesTheFile) {
  RunOptions o = options("e", 1);
  o.dataPath = dir_ + "/nope.txt";
  std::string log;
  llvm::raw_string_ostream os(log);
  llvm::Error e = runTraining(o, os);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("nope.txt"), std::string::npos);
}

} // namespace
} // namespace strata
