//===- DecoderTest.cpp - The key/value cache against the whole-graph run --===//
//
// CachedDecoder (runtime/kernels, one position per token) and GraphDecoder
// (the model's forward graph on the interpreter, the whole window per
// token) must agree: logits within f32 rounding, and identical greedy
// tokens, on GPT and on Llama (RoPE, grouped-query attention), batched,
// and past seq_len (the window slides: both re-run the same last seq/2
// tokens).
//
//===----------------------------------------------------------------------===//
#include "TestModels.h"

#include "runtime/cpu/CpuDevice.h"
#include "runtime/generate/Engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace strata;
using namespace strata::generate;
using strata::test::TestParams;
using strata::test::tinyConfig;

namespace {

/// Largest |a - b| over n floats, relative to the largest |b|.
double relDiff(const float *a, const float *b, int64_t n) {
  double worst = 0, scale = 1e-30;
  for (int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return worst / scale;
}

// Both decoders compute the same f32 model with different summation orders
// (GEMM shapes, attention as GEMM + softmax vs the fused kernel, bias added
// before or after the product); over 2 layers of width 64 that is ~1e-6 of
// the logits' range. 1e-4 leaves room and still catches any real error (a
// wrong position, head or mask moves logits by O(1)).
constexpr double kLogitTol = 1e-4;

struct Fixture {
  ModelConfig c;
  TestParams params;
  ModelWeights weights;
  CpuDevice device;
  Fixture(bool gpt, int64_t seq)
      : c(tinyConfig(gpt, seq)), params(c, gpt ? 11 : 12),
        weights(llvm::cantFail(ModelWeights::bind(c, params.map))) {}
  std::unique_ptr<GraphDecoder> graph(int64_t slots) {
    return llvm::cantFail(GraphDecoder::create(c, params.map, device, slots));
  }
};

std::vector<int32_t> somePrompt(int64_t n, int32_t salt) {
  std::vector<int32_t> p;
  for (int64_t i = 0; i < n; ++i)
    p.push_back(int32_t((i * 7 + salt * 13 + 3) % 65));
  return p;
}

class DecoderTest : public ::testing::TestWithParam<bool> {};

TEST_P(DecoderTest, PrefillAndDecodeLogitsMatchTheGraph) {
  Fixture f(GetParam(), 32);
  int64_t Vp = f.c.paddedVocab;
  CachedDecoder cached(f.weights, 2);
  auto graph = f.graph(2);
  std::vector<int32_t> prompt = somePrompt(9, 1);
  std::vector<float> a(9 * Vp), b(9 * Vp);
  ASSERT_FALSE(bool(cached.prefill(1, prompt, true, a.data())));
  ASSERT_FALSE(bool(graph->prefill(1, prompt, true, b.data())));
  EXPECT_LT(relDiff(a.data(), b.data(), 9 * Vp), kLogitTol);
  // Teacher-forced decoding up to the full window.
  for (int64_t pos = 9; pos < f.c.seq; ++pos) {
    int32_t tok = int32_t((pos * 5) % 65);
    int64_t slot = 1;
    ASSERT_FALSE(bool(cached.decode(slot, tok, a.data())));
    ASSERT_FALSE(bool(graph->decode(slot, tok, b.data())));
    ASSERT_LT(relDiff(a.data(), b.data(), Vp), kLogitTol) << "position " << pos;
  }
  EXPECT_EQ(cached.length(1), f.c.seq);
  // A full slot takes no more tokens.
  int64_t slot = 1;
  int32_t tok = 0;
  EXPECT_TRUE(bool(llvm::errorToBool(cached.decode(slot, tok, a.data()))));
}

/// Greedy tokens of each prompt, all run as one batch on `d`.
std::vector<std::vector<int32_t>>
greedy(Decoder &d, const Tokenizer &tok,
       const std::vector<std::vector<int32_t>> &prompts, int64_t tokens) {
  std::vector<GenerationRequest> reqs(prompts.size());
  std::vector<Sink> sinks(prompts.size());
  std::vector<std::vector<int32_t>> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    reqs[i].prompt = prompts[i];
    reqs[i].maxNewTokens = tokens;
    reqs[i].sampling.temperature = 0;
    sinks[i].onFinish = [&out, i](GenerationResult r) { out[i] = r.tokens; };
  }
  EXPECT_FALSE(bool(generateAll(d, tok, reqs, sinks)));
  return out;
}

TEST_P(DecoderTest, GreedyTokensEqualWithAndWithoutCachePastSeqLen) {
  Fixture f(GetParam(), 16);
  Tokenizer tok = Tokenizer::byteLevel();
  // Prompts shorter than, equal to and longer than seq; 40 new tokens
  // cross seq and slide several times.
  std::vector<std::vector<int32_t>> prompts = {
      somePrompt(1, 0), somePrompt(5, 1), somePrompt(16, 2), somePrompt(23, 3)};
  CachedDecoder cached(f.weights, 4);
  auto batched = greedy(cached, tok, prompts, 40);
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto graph = f.graph(1);
    auto alone = greedy(*graph, tok, {prompts[i]}, 40);
    EXPECT_EQ(batched[i], alone[0]) << "prompt " << i;
    EXPECT_EQ(batched[i].size(), 40u);
  }
  // Not a constant stream (teacher-forced logits above check positions
  // more finely).
  std::set<int32_t> distinct;
  for (const auto &b : batched)
    distinct.insert(b.begin(), b.end());
  EXPECT_GT(distinct.size(), 5u);
}

TEST_P(DecoderTest, OverflowStopEndsAtTheContext) {
  Fixture f(GetParam(), 16);
  Tokenizer tok = Tokenizer::byteLevel();
  CachedDecoder cached(f.weights, 1);
  GenerationRequest r;
  r.prompt = somePrompt(10, 4);
  r.maxNewTokens = 100;
  r.sampling.temperature = 0;
  r.overflow = Overflow::Stop;
  GenerationResult got;
  Sink s;
  s.onFinish = [&](GenerationResult res) { got = std::move(res); };
  ASSERT_FALSE(bool(generateAll(cached, tok, {r}, {s})));
  // The prefill gives token 1; positions 10..15 give one each.
  EXPECT_EQ(got.tokens.size(), 1u + 16 - 10);
  EXPECT_EQ(got.finish, Finish::Length);
}

TEST_P(DecoderTest, LogprobsAreLogSoftmaxOfTheGraphLogits) {
  Fixture f(GetParam(), 32);
  Tokenizer tok = Tokenizer::byteLevel();
  CachedDecoder cached(f.weights, 1);
  GenerationRequest r;
  r.prompt = somePrompt(6, 5);
  r.maxNewTokens = 10;
  r.sampling = {0.9, 0, 1.0, 42};
  r.promptLogprobs = true;
  GenerationResult got;
  Sink s;
  s.onFinish = [&](GenerationResult res) { got = std::move(res); };
  ASSERT_FALSE(bool(generateAll(cached, tok, {r}, {s})));
  ASSERT_EQ(got.tokens.size(), 10u);
  ASSERT_EQ(got.promptLogprobs.size(), 5u);
  // The whole text's logits from the graph, log_softmax over all Vp columns.
  std::vector<int32_t> all = r.prompt;
  all.insert(all.end(), got.tokens.begin(), got.tokens.end());
  int64_t Vp = f.c.paddedVocab, n = int64_t(all.size());
  std::vector<float> logits(size_t(n * Vp));
  auto graph = f.graph(1);
  ASSERT_FALSE(bool(graph->prefill(0, all, true, logits.data())));
  for (int64_t i = 1; i < n; ++i) {
    const float *row = logits.data() + (i - 1) * Vp;
    double mx = *std::max_element(row, row + Vp), sum = 0;
    for (int64_t v = 0; v < Vp; ++v)
      sum += std::exp(double(row[v]) - mx);
    double ref = row[all[size_t(i)]] - mx - std::log(sum);
    double lp =
        i < 6 ? got.promptLogprobs[size_t(i - 1)] : got.logprobs[size_t(i - 6)];
    // Logits agree to kLogitTol of their range (a few units).
    EXPECT_NEAR(lp, ref, 1e-3) << "token " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderTest, ::testing::Values(true, false),
                         [](const auto &info) {
                           return info.param ? "GPT" : "Llama";
                         });

TEST(ModelWeights, RefusesMissingWrongAndNonFiniteParameters) {
  ModelConfig c = tinyConfig(false, 16);
  TestParams p(c, 3);
  auto map = p.map;
  map.erase("layers.1.attn.k.w");
  auto e = ModelWeights::bind(c, map);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("layers.1.attn.k.w"),
            std::string::npos);
  HostTensor wrong(TensorType{DType::F32, {3, 3}});
  map = p.map;
  map["ln_f.w"] = &wrong;
  e = ModelWeights::bind(c, map);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(llvm::toString(e.takeError()).find("ln_f.w is f32[3,3]"),
            std::string::npos);
  HostTensor nan = p.map["layers.0.mlp.up.w"]->clone();
  nan.set(17, NAN);
  map = p.map;
  map["layers.0.mlp.up.w"] = &nan;
  e = ModelWeights::bind(c, map);
  ASSERT_FALSE(bool(e));
  EXPECT_NE(
      llvm::toString(e.takeError()).find("non-finite value (nan at element 17"),
      std::string::npos);
}

} // namespace
