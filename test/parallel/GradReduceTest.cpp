//===- GradReduceTest.cpp - Gradients reduced over dp in place, in buckets
//
// The data-parallel reduction of runtime/parallel/GradReducer.h:
//  - the optimizer program takes its gradients reduced (`dp_reduce` on each
//    gradient input) and holds no dp reduction, so no gradient-sized copy;
//  - bucketed and overlapped with the backward vs all after the backward,
//    and small buckets vs one: the losses of three steps and every
//    parameter and moment afterwards are bitwise equal (the same operations
//    on the same bytes; reductions are deterministic), for dp 2 and dp 2
//    ZeRO-1, GPT and Llama, on the CPU devices and on interpret-mode CUDA
//    devices (NCCL emulated over Gloo, the collectives on the dp
//    communicator's stream);
//  - the overlap is real: with a trace, a bucket's all_reduce starts on the
//    reduction stream before the last backward program ends.
// Agreement with the serial plan (1e-5) is ParallelTrainingTest's matrix.
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "ir/IRText.h"
#include "runtime/Trace.h"
#include "runtime/parallel/Trainer.h"
#include "test/parallel/BitwiseRuns.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

bool contains(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

std::string optimizerIR(const ParallelConfig &c) {
  TrainOptions t = test::tinyTraining(1);
  auto p = compilePipeline(buildModelGraph(test::tinyGpt(0, 2)),
                           trainingCompileOptions(c, t));
  EXPECT_TRUE(bool(p)) << llvm::toString(p.takeError());
  return p ? graphToString(p->pipeline.optimizers[0]) : "";
}

TEST(GradReducePlan, OptimizerTakesAllReducedGradients) {
  ParallelConfig c;
  c.tp = 2;
  c.dp = 2;
  std::string ir = optimizerIR(c);
  EXPECT_TRUE(contains(
      ir, "%grad.wte: f32[16,16] {dp_reduce=\"all_reduce\", shard=[tp,_]}"))
      << ir;
  EXPECT_FALSE(contains(ir, "partial=[dp]")) << ir;
  EXPECT_FALSE(contains(ir, "reduce_scatter")) << ir;
  // The norm's squares are summed over tp only.
  EXPECT_FALSE(contains(ir, "axes=[\"dp\"]")) << ir;
}

TEST(GradReducePlan, ZeroOneOptimizerTakesItsShard) {
  ParallelConfig c;
  c.tp = 2;
  c.dp = 2;
  c.distributedOptimizer = true;
  std::string ir = optimizerIR(c);
  // wte's state is split over dp along dim 1 (tp splits dim 0): the
  // program's input is the reduce-scattered shard.
  EXPECT_TRUE(contains(ir, "%grad.wte: f32[16,8] {dp_dim=1, "
                           "dp_reduce=\"reduce_scatter\", shard=[tp,dp]}"))
      << ir;
  // A 1-d tp-split bias keeps its state whole over dp: all-reduced.
  EXPECT_TRUE(contains(ir, "%grad.layers.0.attn.q.b: f32[8] "
                           "{dp_reduce=\"all_reduce\", shard=[tp]}"))
      << ir;
  EXPECT_FALSE(contains(ir, "reduce_scatter(")) << ir;
  // The updated shard is the output; the runtime gathers it
  // (ParamGatherer.h, ParamGatherTest).
  EXPECT_FALSE(contains(ir, "all_gather(")) << ir;
  EXPECT_TRUE(contains(ir, "%new.wte, %new.adam_m.wte, %new.adam_v.wte = "
                           "adamw_update("))
      << ir;
}

test::TrainRun train(bool llama, bool zero, Backend backend,
                     GradReduceOptions reduce, Trace *trace = nullptr) {
  ParallelConfig c;
  c.dp = 2;
  c.distributedOptimizer = zero;
  DeviceGroupOptions d = test::quickDevices();
  d.backend = backend;
  // Two microbatches: the buckets also carry the average's 1/2.
  TrainOptions t = test::tinyTraining(2);
  t.gradReduce = reduce;
  return test::trainThreeSteps(
      llama ? test::tinyLlama(0, 2) : test::tinyGpt(0, 2), c, d, t, trace);
}

struct Case {
  const char *name;
  bool llama, zero;
  Backend backend;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class OverlapIsBitwiseSequential : public testing::TestWithParam<Case> {};

TEST_P(OverlapIsBitwiseSequential, LossesAndState) {
  const Case &c = GetParam();
  GradReduceOptions small; // several buckets, issued during the backward
  small.bucketBytes = 4096;
  small.overlap = true;
  GradReduceOptions after = small; // the same buckets, after the backward
  after.overlap = false;
  GradReduceOptions one; // one bucket (Megatron's default size), after
  one.overlap = false;
  test::TrainRun overlapped = train(c.llama, c.zero, c.backend, small);
  // The runs learn: the losses move.
  ASSERT_EQ(overlapped.losses.size(), 3u);
  EXPECT_NE(overlapped.losses.front(), overlapped.losses.back());
  test::expectBitwiseEqual(overlapped,
                           train(c.llama, c.zero, c.backend, after));
  test::expectBitwiseEqual(overlapped, train(c.llama, c.zero, c.backend, one));
}

/// When rank 0's first dp all_reduce began and its last backward (B1:
/// microbatch 1) ended, in the trace of the first step, in microseconds.
std::pair<int64_t, int64_t> firstReduceAndLastBackward(bool overlap) {
  GradReduceOptions o;
  o.bucketBytes = 4096;
  o.overlap = overlap;
  Trace trace;
  train(false, false, Backend::Cpu, o, &trace);
  int64_t reduce = -1, backwardEnd = -1;
  llvm::json::Value v = trace.toJson();
  for (const llvm::json::Value &e : *v.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object &o = *e.getAsObject();
    if (o.getInteger("pid").getValueOr(-1) != 0 ||
        o.getString("ph").getValueOr("") != "X")
      continue;
    llvm::StringRef name = *o.getString("name");
    int64_t ts = *o.getInteger("ts"), dur = *o.getInteger("dur");
    if (name == "all_reduce dp" && reduce < 0)
      reduce = ts;
    if (name == "B1" && backwardEnd < 0)
      backwardEnd = ts + dur;
  }
  return {reduce, backwardEnd};
}

// The trace shows the overlap: with it, the first bucket's all_reduce starts
// on the reduction stream while the last backward program runs (the program's
// span lasts until the device is idle); without it, after that program.
TEST(GradReduceTrace, BucketsStartDuringTheLastBackward) {
  auto [reduce, end] = firstReduceAndLastBackward(true);
  ASSERT_GE(reduce, 0);
  ASSERT_GE(end, 0);
  EXPECT_LT(reduce, end);
  auto [seqReduce, seqEnd] = firstReduceAndLastBackward(false);
  ASSERT_GE(seqReduce, 0);
  EXPECT_GE(seqReduce, seqEnd);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, OverlapIsBitwiseSequential,
    testing::Values(
        Case{"gpt_dp2_cpu", false, false, Backend::Cpu},
        Case{"gpt_dp2_zero_cpu", false, true, Backend::Cpu},
        Case{"llama_dp2_cpu", true, false, Backend::Cpu},
        Case{"llama_dp2_zero_cpu", true, true, Backend::Cpu},
        Case{"gpt_dp2_zero_interpret", false, true, Backend::CudaInterpret},
        Case{"llama_dp2_interpret", true, false, Backend::CudaInterpret}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace strata
