//===- RecomputeTest.cpp - Recompute costs, choices and byte counts -------===//
#include "passes/recompute/Recompute.h"
#include "frontends/Models.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/memory/Activations.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

Graph microbatch(int64_t layers) {
  pb::ModelSpec s;
  s.set_family(pb::ModelSpec::GPT);
  s.set_vocab_size(16);
  s.set_make_vocab_size_divisible_by(8);
  s.set_hidden(8);
  s.set_layers(layers);
  s.set_heads(2);
  s.set_seq_len(4);
  s.set_micro_batch(2);
  s.set_dropout(0.1);
  Graph g = buildModelGraph(resolveModelSpec(s));
  EXPECT_FALSE(bool(differentiate(g)));
  return g;
}

TEST(Recompute, ParsesByteCounts) {
  EXPECT_EQ(parseBytes("4096"), 4096);
  EXPECT_EQ(parseBytes("10KB"), 10000);
  EXPECT_EQ(parseBytes("512MiB"), int64_t(512) << 20);
  EXPECT_EQ(parseBytes("40GB"), int64_t(40) * 1000 * 1000 * 1000);
  EXPECT_EQ(parseBytes("2TiB"), int64_t(2) << 40);
  EXPECT_EQ(parseBytes("7B"), 7);
  EXPECT_FALSE(parseBytes(""));
  EXPECT_FALSE(parseBytes("GB"));
  EXPECT_FALSE(parseBytes("40Gb"));
  EXPECT_FALSE(parseBytes("-4"));
  EXPECT_FALSE(parseBytes("99999999999TiB"));
}

TEST(Recompute, LayerCostsMatchTheStash) {
  Graph g = microbatch(3);
  std::vector<LayerRecomputeCost> costs = layerRecomputeCosts(g);
  ASSERT_EQ(costs.size(), 3u);
  for (const LayerRecomputeCost &c : costs) {
    // 16 values of s*b*h = 64 f32 elements stashed per block; the block
    // input (256 bytes) stays.
    EXPECT_EQ(c.savedBytes, 16 * 64 * 4 - 256);
    EXPECT_GT(c.flops, 0);
  }
  // The prediction is what recomputing block 1 does to the stash.
  Graph full = g;
  RecomputeOptions o;
  o.mode = RecomputeMode::Full;
  o.layers = {1};
  ASSERT_FALSE(bool(recompute(full, o)));
  EXPECT_EQ(stashBytes(g) - stashBytes(full), costs[1].savedBytes);
  auto units = stashBytesByUnit(full, SavedStateModel::Strata);
  EXPECT_EQ(units["layers.1"], 256);
  EXPECT_EQ(units["layers.0"], 16 * 64 * 4);
}

TEST(Recompute, ChoosesTheCheapestBlocksPerByte) {
  std::vector<LayerRecomputeCost> costs = {
      {0, 100, 10}, {1, 100, 50}, {2, 30, 10}, {3, 0, 0}};
  auto one = chooseRecomputeLayers(costs, {0, 1, 2, 3}, 40);
  ASSERT_TRUE(bool(one));
  EXPECT_EQ(*one, (llvm::SmallVector<int64_t, 8>{1})); // 2 FLOP/B
  auto two = chooseRecomputeLayers(costs, {0, 1, 2, 3}, 55);
  ASSERT_TRUE(bool(two));
  EXPECT_EQ(*two, (llvm::SmallVector<int64_t, 8>{1, 2})); // then 3 FLOP/B
  auto limited = chooseRecomputeLayers(costs, {0, 2}, 15);
  ASSERT_TRUE(bool(limited));
  EXPECT_EQ(*limited, (llvm::SmallVector<int64_t, 8>{0, 2}));
  auto none = chooseRecomputeLayers(costs, {0, 1}, 0);
  ASSERT_TRUE(bool(none));
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(toString(chooseRecomputeLayers(costs, {0, 2}, 25).takeError()),
            "recomputing every candidate block saves 20 bytes per microbatch, "
            "5 bytes less than needed (raise the budget, or split the model "
            "further with tp, sp or pp)");
}

TEST(Recompute, ErrorsLeaveTheGraphUnchanged) {
  Graph g = microbatch(2);
  size_t nodes = g.nodes().size();
  RecomputeOptions o;
  o.mode = RecomputeMode::Auto;
  o.budget = 1000;
  EXPECT_FALSE(toString(recompute(g, o)).empty());
  EXPECT_EQ(g.nodes().size(), nodes);
  EXPECT_TRUE(
      llvm::none_of(g.nodes(), [](const Node &n) { return isRecomputed(n); }));
}

} // namespace
