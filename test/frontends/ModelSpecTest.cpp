//===- ModelSpecTest.cpp - Spec parsing, checks and defaults --------------===//
#include "TestSpecs.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace strata;
using namespace strata::test;

namespace {

// A valid GPT spec to which each case appends one bad line (line 3).
constexpr const char *kBase =
    "family: GPT vocab_size: 65 hidden: 64 layers: 2 heads: 4\n"
    "seq_len: 16\n";

struct BadSpec {
  const char *what;
  std::string text;
  const char *error; // the whole message, located
};

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, ReportsLocatedError) {
  const BadSpec &c = GetParam();
  auto spec = parseModelSpec(c.text, "spec.textproto");
  ASSERT_FALSE(spec) << c.what;
  EXPECT_EQ(toString(spec.takeError()), c.error) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Specs, BadSpecTest,
    ::testing::Values(
        BadSpec{
            "unknown field, with a suggestion",
            std::string(kBase) + "hiden: 3\n",
            "spec.textproto:3:1: error: unknown field 'hiden' (did you mean "
            "'hidden'?)"},
        BadSpec{"unknown field, nothing close",
                std::string(kBase) + "  colour: 3\n",
                "spec.textproto:3:3: error: unknown field 'colour' (see "
                "proto/model_spec.proto for the fields)"},
        BadSpec{"unknown enum value", "family: GTP\n",
                "spec.textproto:1:9: error: unknown value 'GTP' for field "
                "'family' (expected GPT or LLAMA or FALCON)"},
        BadSpec{"string for an integer",
                std::string(kBase) + "micro_batch: \"8\"\n",
                "spec.textproto:3:14: error: Expected integer, got: \"8\""},
        BadSpec{"unclosed message", std::string(kBase) + "training {\n",
                "spec.textproto:4:1: error: Expected identifier, got: "},
        BadSpec{"field given twice", std::string(kBase) + "hidden: 32\n",
                "spec.textproto:3:7: error: Non-repeated field \"hidden\" is "
                "specified multiple times."},
        BadSpec{"negative size", std::string(kBase) + "micro_batch: -4\n",
                "spec.textproto:3:1: error: micro_batch must be positive, got "
                "-4 (sequences per microbatch)"},
        BadSpec{"zero layers",
                "family: GPT vocab_size: 65 hidden: 64\nlayers: 0 heads: 4 "
                "seq_len: 16\n",
                "spec.textproto:2:1: error: layers must be positive, got 0 (a "
                "model needs at least one transformer block)"},
        BadSpec{"heads not dividing hidden",
                "family: GPT vocab_size: 65 hidden: 100 layers: 2\nheads: 3 "
                "seq_len: 16\n",
                "spec.textproto:2:1: error: heads (3) must divide hidden (100) "
                "(each head gets hidden / heads dimensions; pick heads among "
                "the divisors of hidden)"},
        BadSpec{
            "kv_heads not dividing heads",
            "family: LLAMA vocab_size: 65 hidden: 64 layers: 2 heads: 4\n"
            "seq_len: 16 kv_heads: 3\n",
            "spec.textproto:2:13: error: kv_heads (3) must divide heads (4) "
            "(each kv head serves heads / kv_heads query heads; pick "
            "kv_heads among the divisors of heads)"},
        BadSpec{"GQA on GPT", std::string(kBase) + "kv_heads: 2\n",
                "spec.textproto:3:1: error: GPT has no grouped-query attention "
                "(kv_heads must be 0 or equal heads; use family: LLAMA for "
                "GQA)"},
        BadSpec{
            "odd head_dim with rope",
            "family: LLAMA vocab_size: 65 hidden: 60 layers: 2\n"
            "heads: 4 seq_len: 16\n",
            "spec.textproto:2:1: error: head_dim = hidden / heads = 15 must "
            "be even for rotary embeddings (RoPE rotates pairs of "
            "dimensions; change heads or hidden)"},
        BadSpec{"zero seq_len",
                "family: GPT vocab_size: 65 hidden: 64 layers: 2 heads: 4\n"
                "seq_len: 0\n",
                "spec.textproto:2:1: error: seq_len must be positive, got 0 "
                "(tokens per sample)"},
        BadSpec{"dropout out of range", std::string(kBase) + "dropout: 1.0\n",
                "spec.textproto:3:1: error: dropout must be in [0, 1), got 1"},
        BadSpec{"absurd size", std::string(kBase) + "ffn: 4000000000\n",
                "spec.textproto:3:1: error: ffn must be at most 1048576, got "
                "4000000000 (0 picks the family default)"},
        BadSpec{"missing required fields", "family: LLAMA\nvocab_size: 65\n",
                "spec.textproto: error: missing required field 'hidden' (add "
                "`hidden: 768`)\n"
                "spec.textproto: error: missing required field 'layers' (add "
                "`layers: 12`)\n"
                "spec.textproto: error: missing required field 'heads' (add "
                "`heads: 12`)\n"
                "spec.textproto: error: missing required field 'seq_len' (add "
                "`seq_len: 1024`)"},
        BadSpec{"bad training field, nested location",
                std::string(kBase) +
                    "training {\n  steps: 100\n  beta2: 1.5\n}\n",
                "spec.textproto:5:3: error: beta2 must be in [0, 1), got 1.5"},
        BadSpec{"min_lr above lr",
                std::string(kBase) + "training { lr: 1e-5 }\n",
                "spec.textproto:3:12: error: min_lr (6e-05) must not exceed lr "
                "(1e-05) (the schedule decays from lr down to min_lr; lower "
                "min_lr or raise lr)"},
        BadSpec{"warmup past decay",
                std::string(kBase) + "training { steps: 100 warmup: 100 }\n",
                "spec.textproto:3:23: error: decay_iters (100) must be greater "
                "than warmup (100) (the cosine decay runs from the end of "
                "warmup to decay_iters; shorten warmup or raise decay_iters)"},
        BadSpec{
            "byte tokenizer with a small vocab",
            std::string(kBase) + "data { tokenizer: BYTE }\n",
            "spec.textproto:3:8: error: the BYTE tokenizer needs vocab_size "
            ">= 256, got 65 (raise vocab_size to 256)"}));

TEST(ModelSpec, AllExamplesLoad) {
  std::error_code ec;
  int n = 0;
  for (llvm::sys::fs::directory_iterator it(sourcePath("examples"), ec), end;
       it != end && !ec; it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".textproto")
      continue;
    ++n;
    auto spec = loadModelSpec(it->path());
    EXPECT_TRUE(bool(spec)) << toString(spec.takeError());
  }
  EXPECT_GE(n, 5);
}

TEST(ModelSpec, MissingFileNamesIt) {
  auto spec = loadModelSpec("/nonexistent/x.textproto");
  ASSERT_FALSE(spec);
  EXPECT_EQ(toString(spec.takeError()),
            "/nonexistent/x.textproto: error: cannot read model spec: No such "
            "file or directory");
}

TEST(ModelSpec, ResolvesFamilyDefaults) {
  ModelConfig gpt = resolveModelSpec(loadExample("gpt2_124m"));
  EXPECT_EQ(gpt.paddedVocab, 50304);
  EXPECT_EQ(gpt.ffn, 4 * 768);
  EXPECT_EQ(gpt.kvHeads, 12);
  EXPECT_EQ(gpt.headDim, 64);
  EXPECT_TRUE(gpt.tieEmbeddings);

  ModelConfig tiny = resolveModelSpec(loadExample("llama_tiny"));
  EXPECT_EQ(tiny.ffn, 352); // 2/3 * 512 = 341 -> multiple of 32
  EXPECT_EQ(tiny.kvHeads, 2);
  EXPECT_EQ(tiny.paddedVocab, 128);
  EXPECT_FALSE(tiny.tieEmbeddings);
}

TEST(ModelSpec, LlamaDefaultFfnMatchesLlama2) {
  EXPECT_EQ(defaultFfn(pb::ModelSpec::LLAMA, 4096, 256), 11008);
  EXPECT_EQ(defaultFfn(pb::ModelSpec::LLAMA, 5120, 256), 13824); // 13B
  EXPECT_EQ(defaultFfn(pb::ModelSpec::GPT, 1600, 256), 6400);
}

TEST(ModelSpec, PadsVocabLikeMegatron) {
  EXPECT_EQ(padVocabSize(65, 128), 128);
  EXPECT_EQ(padVocabSize(50257, 128), 50304);
  EXPECT_EQ(padVocabSize(32000, 128), 32000);
  EXPECT_EQ(padVocabSize(50257, 1), 50257);
}

TEST(ModelSpec, CheckWithoutTextNamesTheSource) {
  pb::ModelSpec spec = loadExample("gpt_tiny");
  spec.set_heads(5);
  llvm::Error e = checkModelSpec(spec, "run.plan");
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(toString(std::move(e)),
            "run.plan: error: heads (5) must divide hidden (128) (each head "
            "gets hidden / heads dimensions; pick heads among the divisors of "
            "hidden)");
}

} // namespace
