//===- ModelStatsTest.cpp - Parameter counts and FLOPs --------------------===//
#include "TestSpecs.h"

#include "frontends/ModelStats.h"

using namespace strata;
using namespace strata::test;

namespace {

TEST(ModelStats, GPT2SmallUnpaddedIsExactly124439808) {
  pb::ModelSpec spec = loadExample("gpt2_124m");
  spec.set_make_vocab_size_divisible_by(1);
  ParamStats s = countParams(buildModelGraph(resolveModelSpec(spec)));
  EXPECT_EQ(s.total, 124439808);
  EXPECT_EQ(s.embedding, 50257 * 768 + 1024 * 768);
  ASSERT_EQ(s.layers.size(), 12u);
  EXPECT_EQ(s.layers[5].attention, 4 * (768 * 768 + 768));
  EXPECT_EQ(s.layers[5].mlp, 2 * 768 * 3072 + 3072 + 768);
  EXPECT_EQ(s.layers[5].norms, 4 * 768);
  EXPECT_EQ(s.finalNorm, 2 * 768);
  EXPECT_EQ(s.head, 0); // tied
  EXPECT_EQ(s.other, 0);
}

TEST(ModelStats, GPT2SmallPaddedAddsThePaddingRows) {
  ParamStats s =
      countParams(buildModelGraph(resolveModelSpec(loadExample("gpt2_124m"))));
  EXPECT_EQ(s.total, 124439808 + (50304 - 50257) * 768);
}

TEST(ModelStats, Llama2_7BIsExactly6738415616) {
  ParamStats s =
      countParams(buildModelGraph(resolveModelSpec(loadExample("llama2_7b"))));
  EXPECT_EQ(s.total, 6738415616);
  EXPECT_EQ(s.embedding, 32000 * 4096);
  EXPECT_EQ(s.head, 32000 * 4096);
  ASSERT_EQ(s.layers.size(), 32u);
  EXPECT_EQ(s.layers[31].attention, 4 * 4096 * 4096);
  EXPECT_EQ(s.layers[31].mlp, 3 * 4096 * 11008);
  EXPECT_EQ(s.layers[31].norms, 2 * 4096);
}

TEST(ModelStats, GPT2XLIsAbout1558M) {
  // GPT-2 XL is reported as 1.5B; with the 50257 vocabulary it has
  // 1,557,611,200 parameters (Hugging Face's gpt2-xl).
  pb::ModelSpec spec = loadExample("gpt2_1.5b");
  spec.set_make_vocab_size_divisible_by(1);
  EXPECT_EQ(countParams(buildModelGraph(resolveModelSpec(spec))).total,
            1557611200);
}

TEST(ModelStats, GroupedQueryAttentionShrinksKV) {
  ParamStats s = countParams(buildFromText(kTinyLlama));
  // q and o are [32,32]; k and v [32, 2 kv heads * 8].
  EXPECT_EQ(s.layers[0].attention, 2 * 32 * 32 + 2 * 32 * 16);
}

TEST(ModelStats, MegatronFlopsFormula) {
  // 96·B·s·l·h²·(1 + s/(6h) + V/(16lh)) for GPT-2 small, B = 8:
  // 96·8·1024·12·768² · (1 + 1024/4608 + 50304/147456)
  ModelConfig c = resolveModelSpec(loadExample("gpt2_124m"));
  double expected =
      96.0 * 8 * 1024 * 12 * 768 * 768 * (1 + 1024.0 / 4608 + 50304.0 / 147456);
  EXPECT_DOUBLE_EQ(megatronFlopsPerStep(c, 8), expected);
  EXPECT_DOUBLE_EQ(megatronFlopsPerToken(c), expected / (8 * 1024));
  // About 6·N per token for the matmuls, 8/6 of that with recompute, plus
  // attention: between 6N and 10N.
  double n = 124475904;
  EXPECT_GT(megatronFlopsPerToken(c), 6 * n);
  EXPECT_LT(megatronFlopsPerToken(c), 10 * n);
}

} // namespace
