//===- TimeCutTest.cpp - The stage cut by predicted time ------------------===//
//
// passes/pipeline/CostModel.h: the stage cut weighs nodes by FLOPs unless a
// ScopedNodeCost installs predicted seconds (perf/OpTime.h's
// predictedNodeSeconds). On a device whose memory is slow next to its
// matmul peak, FLOPs misjudge the stages: a wide-vocabulary LM head is one
// efficient GEMM, while each block runs many small memory-bound kernels, so
// the FLOP cut leaves one rank busy and the other idle, and the time cut is
// faster on that device.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "passes/pipeline/CostModel.h"
#include "perf/Estimate.h"
#include "perf/OpTime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

namespace strata {
namespace {

ModelConfig wideVocabGpt() {
  ModelConfig c;
  c.family = pb::ModelSpec::GPT;
  c.name = "wide-vocab";
  c.vocab = c.paddedVocab = 8192;
  c.hidden = 128;
  c.layers = 8;
  c.heads = 4;
  c.kvHeads = 4;
  c.headDim = 32;
  c.ffn = 512;
  c.seq = 64;
  c.microBatch = 8;
  c.tieEmbeddings = true;
  return c;
}

/// An accelerator with a matmul peak far above its memory bandwidth.
pb::Hardware slowMemory() {
  auto hw = loadHardware("a100-80gb");
  EXPECT_TRUE(bool(hw));
  hw->mutable_accelerator()->set_memory_bandwidth(50e9);
  return *hw;
}

struct Cut {
  std::vector<int64_t> blocks;
  PlanEstimate estimate;
};

Cut compileAndEstimate(const pb::Hardware &hw, bool byTime) {
  ParallelCompileOptions o;
  o.pp = 2;
  o.microbatches = 8;
  std::optional<ScopedNodeCost> scope;
  if (byTime) {
    auto seconds = predictedNodeSeconds(hw, Precision::BF16);
    EXPECT_TRUE(bool(seconds));
    scope.emplace(std::move(*seconds));
  }
  auto compiled = compilePipeline(buildModelGraph(wideVocabGpt()), o);
  EXPECT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  scope.reset();
  Cut cut;
  for (const PipelineStage &s : compiled->pipeline.stages)
    cut.blocks.push_back(s.numLayers);
  EstimateOptions eo;
  eo.precision = Precision::BF16;
  auto e = estimatePlan(*compiled, hw, StepWork(), {}, eo);
  EXPECT_TRUE(bool(e)) << llvm::toString(e.takeError());
  cut.estimate = std::move(*e);
  return cut;
}

TEST(TimeCutTest, TimeCutBalancesWhereTheFlopCutDoesNot) {
  pb::Hardware hw = slowMemory();
  Cut flops = compileAndEstimate(hw, false);
  Cut time = compileAndEstimate(hw, true);
  ASSERT_EQ(flops.blocks.size(), 2u);
  ASSERT_EQ(time.blocks.size(), 2u);
  // The cuts differ: FLOPs make the wide head (an efficient GEMM) look
  // like several blocks, while in time each block's many small
  // memory-bound kernels weigh more.
  EXPECT_NE(time.blocks, flops.blocks);
  // The FLOP cut's imbalance shows in the simulation: the ranks' busy
  // times differ more than under the time cut, and the step is slower.
  auto spread = [](const Cut &c) {
    return std::abs(c.estimate.sim.ranks[0].busy -
                    c.estimate.sim.ranks[1].busy);
  };
  EXPECT_GT(spread(flops), 2 * spread(time));
  EXPECT_LT(time.estimate.stepTime, flops.estimate.stepTime);
  // Without a scope, the cut is by FLOPs again.
  EXPECT_EQ(compileAndEstimate(hw, false).blocks, flops.blocks);
  EXPECT_STREQ(nodeCostName(), "FLOPs");
}

} // namespace
} // namespace strata
