//===- EstimateTest.cpp - Estimates of compiled plans ---------------------===//
//
// gpt_tiny's shapes (examples/gpt_tiny.textproto) compiled for two pipeline
// stages: an unbalanced layer cut is slower than the balanced one, every
// rank's phases sum to the step time, full recomputation shows as
// recompute time about one forward of the blocks, MFU is model FLOPs
// over the step's capacity, the dp gradient buckets hold every
// parameter once, in the order the backward finishes them, and ZeRO-1's
// gather buckets every parameter once, in the order the forward reads them.
//
//===----------------------------------------------------------------------===//
#include "perf/Estimate.h"
#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "perf/GradBuckets.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

ModelConfig tinyGpt() {
  ModelConfig c;
  c.family = pb::ModelSpec::GPT;
  c.name = "tiny";
  c.vocab = 65;
  c.paddedVocab = 128;
  c.hidden = 128;
  c.layers = 4;
  c.heads = 4;
  c.kvHeads = 4;
  c.headDim = 32;
  c.ffn = 512;
  c.seq = 64;
  c.microBatch = 12;
  c.tieEmbeddings = true;
  return c;
}

PlanEstimate estimate(const ParallelCompileOptions &o, const char *cluster,
                      Precision precision = Precision::BF16) {
  ModelConfig c = tinyGpt();
  auto compiled = compilePipeline(buildModelGraph(c), o);
  EXPECT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  auto hw = loadHardware(cluster);
  EXPECT_TRUE(bool(hw)) << llvm::toString(hw.takeError());
  StepWork work;
  int64_t seqs = c.microBatch * o.microbatches;
  work.tokens = double(seqs * c.seq);
  work.modelFlops = work.hardwareFlops = modelFlopsPerStep(c, seqs);
  std::vector<int64_t> peaks;
  for (const RankMemory &m : compiled->memory.ranks)
    peaks.push_back(m.peak);
  EstimateOptions eo;
  eo.precision = precision;
  auto e = estimatePlan(*compiled, *hw, work, peaks, eo);
  EXPECT_TRUE(bool(e)) << llvm::toString(e.takeError());
  return std::move(*e);
}

ParallelCompileOptions pipeline2(std::vector<int64_t> cut) {
  ParallelCompileOptions o;
  o.pp = 2;
  o.microbatches = 8;
  o.layersPerStage = std::move(cut);
  return o;
}

TEST(EstimateTest, UnbalancedCutIsSlower) {
  PlanEstimate balanced = estimate(pipeline2({2, 2}), "a100-80gb");
  PlanEstimate unbalanced = estimate(pipeline2({3, 1}), "a100-80gb");
  // Rank 0 holds 3 blocks and the embedding: its F+B is at least 3/2 of the
  // balanced stages' block work, and it never waits much for rank 1.
  EXPECT_GT(unbalanced.stepTime, 1.2 * balanced.stepTime);
  for (const PlanEstimate *e : {&balanced, &unbalanced})
    for (const RankTime &r : e->sim.ranks) {
      double sum = 0;
      for (double t : r.phase)
        sum += t;
      EXPECT_NEAR(sum, e->stepTime, 1e-12 * e->stepTime);
    }
  // The light rank idles more than the heavy one.
  EXPECT_GT(unbalanced.sim.ranks[1].phase[size_t(Phase::Idle)],
            unbalanced.sim.ranks[0].phase[size_t(Phase::Idle)]);
}

TEST(EstimateTest, FullRecomputationCostsAboutOneForward) {
  ParallelCompileOptions none = pipeline2({});
  ParallelCompileOptions full = none;
  full.recompute = RecomputeMode::Full;
  PlanEstimate a = estimate(none, "h100-sxm"), b = estimate(full, "h100-sxm");
  double recompute = b.breakdown[size_t(Phase::Recompute)];
  EXPECT_EQ(a.breakdown[size_t(Phase::Recompute)], 0);
  EXPECT_GT(recompute, 0);
  // The blocks' forward again: less than the whole forward (which has the
  // embedding and head too), itself less than half of F + B (B does at
  // least F's work), and the step gets longer.
  EXPECT_LT(recompute, a.breakdown[size_t(Phase::Compute)] / 2);
  EXPECT_GT(b.stepTime, a.stepTime);
}

TEST(EstimateTest, MfuIsModelFlopsOverCapacity) {
  ParallelCompileOptions o;
  o.tp = 2;
  o.dp = 2;
  o.microbatches = 2;
  PlanEstimate e = estimate(o, "a100-80gb", Precision::TF32);
  EXPECT_EQ(e.devices, 4);
  EXPECT_EQ(e.peakFlops, 156e12);
  double flops = modelFlopsPerStep(tinyGpt(), 24);
  EXPECT_DOUBLE_EQ(e.mfu, flops / (e.stepTime * 4 * 156e12));
  EXPECT_DOUBLE_EQ(e.tokensPerSecond, 24 * 64 / e.stepTime);
  EXPECT_GT(e.breakdown[size_t(Phase::CommTp)], 0);
  EXPECT_GT(e.breakdown[size_t(Phase::CommDp)], 0);
}

/// dp 2 over 2 microbatches, with or without ZeRO-1.
ParallelCompileOptions dp2(bool zero1) {
  ParallelCompileOptions o;
  o.dp = 2;
  o.microbatches = 2;
  o.distributedOptimizer = zero1;
  return o;
}

TEST(EstimateTest, GradientBucketsHoldEveryParameterOnce) {
  // dp 2: every parameter's gradient is all-reduced, or reduce-scattered
  // with ZeRO-1, in buckets issued in the order the backward finishes them.
  ModelConfig c = tinyGpt();
  Graph model = buildModelGraph(c);
  double padded = 0; // the parameters' bytes, each padded to 256
  for (ValueId v : model.inputs())
    if (model.type(v).dtype == DType::F32) // not the token ids or labels
      padded += double(llvm::alignTo(model.type(v).bytes(), 256));
  for (bool zero1 : {false, true}) {
    auto compiled = compilePipeline(buildModelGraph(c), dp2(zero1));
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    const PipelinePlan &p = compiled->pipeline;
    EXPECT_TRUE(gradientBuckets(p, 0, 1, 1 << 30).empty()) << "dp 1";
    std::vector<GradBucket> one = gradientBuckets(p, 0, 2, 1 << 30);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].bytes, padded);
    EXPECT_EQ(one[0].chunk, 0); // issued during the last backward
    if (zero1)
      EXPECT_FALSE(one[0].reduceScatterBytes.empty());
    else
      EXPECT_EQ(one[0].allReduceBytes, padded);
    // 64 KB buckets: several, in order, the same bytes in all.
    std::vector<GradBucket> many = gradientBuckets(p, 0, 2, 64 << 10);
    EXPECT_GT(many.size(), 3u);
    double sum = 0;
    for (size_t i = 0; i < many.size(); ++i) {
      sum += many[i].bytes;
      EXPECT_EQ(many[i].chunk, 0);
      if (i > 0)
        EXPECT_LE(many[i - 1].node, many[i].node);
      EXPECT_LE(many[i].node, p.stages[0].backward.nodes().size());
    }
    EXPECT_EQ(sum, padded);
    EXPECT_LT(many.front().node, many.back().node) << "some overlap";
  }
}

TEST(EstimateTest, ParameterGathersFollowTheForwardsReads) {
  // dp 2 with ZeRO-1: every parameter is gathered once, full size, in
  // buckets ordered by where the first forward reads them; without the
  // distributed optimizer nothing is gathered.
  ModelConfig c = tinyGpt();
  Graph model = buildModelGraph(c);
  double params = 0;
  int64_t count = 0;
  for (ValueId v : model.inputs())
    if (model.type(v).dtype == DType::F32)
      params += double(model.type(v).bytes()), ++count;
  for (bool zero1 : {false, true}) {
    auto compiled = compilePipeline(buildModelGraph(c), dp2(zero1));
    ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
    std::vector<GatherBucket> b =
        parameterGatherBuckets(compiled->pipeline, 0, 64 << 10);
    if (!zero1) {
      EXPECT_TRUE(b.empty());
      continue;
    }
    ASSERT_GT(b.size(), 3u);
    double sum = 0;
    int64_t members = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      for (double x : b[i].gatherBytes)
        sum += x, ++members;
      EXPECT_EQ(b[i].chunk, 0);
      if (i > 0)
        EXPECT_LE(b[i - 1].node, b[i].node);
    }
    EXPECT_EQ(sum, params);
    EXPECT_EQ(members, count);
    EXPECT_LT(b.front().node, b.back().node) << "read along the forward";
  }
}

TEST(EstimateTest, ErrorsSayWhatDoesNotFit) {
  ParallelCompileOptions o;
  o.dp = 16;
  o.microbatches = 1;
  ModelConfig c = tinyGpt();
  c.microBatch = 16;
  auto compiled = compilePipeline(buildModelGraph(c), o);
  ASSERT_TRUE(bool(compiled)) << llvm::toString(compiled.takeError());
  auto hw = loadHardware("a100-80gb");
  ASSERT_TRUE(bool(hw));
  hw->set_nodes(1);
  auto e = estimatePlan(*compiled, *hw, StepWork(), {}, EstimateOptions());
  ASSERT_FALSE(bool(e));
  EXPECT_EQ(llvm::toString(e.takeError()),
            "the layout needs 16 devices, the cluster 'a100-80gb' has 8 (1 "
            "nodes of 8; use a smaller tp * dp * pp or more nodes)");
  auto v100 = loadHardware("v100-dgx2h");
  ASSERT_TRUE(bool(v100));
  EstimateOptions tf32;
  tf32.precision = Precision::TF32;
  auto noTf32 = estimatePlan(*compiled, *v100, StepWork(), {}, tf32);
  ASSERT_FALSE(bool(noTf32));
  EXPECT_EQ(llvm::toString(noTf32.takeError()),
            "v100-dgx2h (V100 SXM3 32GB) has no tf32 matmul peak (choose "
            "another --precision)");
  auto unknown = loadHardware("a100");
  ASSERT_FALSE(bool(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError())
                .find("unknown cluster 'a100' (not a built-in one and no "
                      "such file; the built-in clusters are a100-80gb, "
                      "h100-sxm, h200, v100-dgx2h"),
            std::string::npos);
}

} // namespace
} // namespace strata
