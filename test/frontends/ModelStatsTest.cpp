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

// GPT's model FLOPs are Korthikanti et al.'s 72-coefficient formula, and
// with full recomputation Megatron-LM's 96 formula (Narayanan et al.), for
// GPT-2 small at B = 8: 72·B·s·l·h²·(1 + s/(6h) + V/(12lh)).
TEST(ModelStats, GptFlopsAreMegatronsFormulas) {
  ModelConfig c = resolveModelSpec(loadExample("gpt2_124m"));
  double base = 8.0 * 1024 * 12 * 768 * 768;
  double model = 72 * base * (1 + 1024.0 / 4608 + 50304.0 / 110592);
  double full = 96 * base * (1 + 1024.0 / 4608 + 50304.0 / 147456);
  // Sums of different terms in another order: equal to ~1e-15.
  EXPECT_NEAR(modelFlopsPerStep(c, 8), model, 1e-12 * model);
  EXPECT_NEAR(modelFlopsPerStep(c, 8) + recomputeFlopsPerStep(c, 8, true), full,
              1e-12 * full);
  // Selective recomputation adds the attention scores and values:
  // 4·B·s²·h per layer.
  EXPECT_DOUBLE_EQ(recomputeFlopsPerStep(c, 8, false),
                   4.0 * 8 * 1024 * 1024 * 768 * 12);
  // About 6·N per token for the matmuls plus attention.
  double n = 124475904, perToken = modelFlopsPerStep(c, 1) / 1024;
  EXPECT_GT(perToken, 6 * n);
  EXPECT_LT(perToken, 8 * n);
}

// Llama counts what it runs: GQA's narrower k/v and SwiGLU's three MLP
// matrices. Llama 2 7B: h 4096, 32 heads (= kv heads), F 11008, s 4096,
// V 32000, 32 layers; forward per token per layer 2·(4h² + 3hF) + 4·s·h.
TEST(ModelStats, LlamaFlopsCountSwiGluAndKvHeads) {
  ModelConfig c = resolveModelSpec(loadExample("llama2_7b"));
  double h = 4096, f = 11008, s = c.seq, v = c.paddedVocab;
  double forward = 32 * (2 * (4 * h * h + 3 * h * f) + 4 * s * h) + 2 * h * v;
  EXPECT_NEAR(modelFlopsPerStep(c, 1), 3 * s * forward,
              1e-12 * 3 * s * forward);
  ModelConfig gqa = c;
  gqa.kvHeads = 8; // k and v shrink by 4: 2·h·(2·h/4) fewer per token
  EXPECT_NEAR(modelFlopsPerStep(c, 1) - modelFlopsPerStep(gqa, 1),
              3 * s * 32 * 2 * (2 * h * h - 2 * h * h / 4), 1e3);
}

} // namespace
