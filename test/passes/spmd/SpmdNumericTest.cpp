//===- SpmdNumericTest.cpp - Partitioned graphs compute the serial function
//===//
//
// For tiny GPT and Llama models (forward + autodiff, in f64, with dropout),
// every parallel configuration is partitioned by megatron-seeds + spmd and
// run on all its ranks by the lockstep simulator; the loss and every
// parameter gradient must equal the serial run's. f64 makes the comparison
// tight (1e-10 relative): only the order of additions differs.
//
//===----------------------------------------------------------------------===//
#include "SpmdSimulator.h"

#include "frontends/Models.h"
#include "ir/Verifier.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/spmd/Spmd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace strata {
namespace {

constexpr const char *kGpt = R"pb(
  name: "gpt-spmd" family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
  hidden: 16 layers: 2 heads: 4 seq_len: 8 micro_batch: 4 dropout: 0.1
)pb";
constexpr const char *kGptUntied = R"pb(
  name: "gpt-untied" family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
  hidden: 16 layers: 1 heads: 4 seq_len: 8 micro_batch: 4 dropout: 0.0
  tie_embeddings: false
)pb";
constexpr const char *kLlama = R"pb(
  name: "llama-spmd" family: LLAMA vocab_size: 30 make_vocab_size_divisible_by: 16
  hidden: 16 layers: 2 heads: 4 kv_heads: 2 ffn: 24 seq_len: 8 micro_batch: 4
  dropout: 0.1
)pb";

// Falcon-7B's layout: one KV head (multi-query), replicated over tp.
constexpr const char *kFalcon7b = R"pb(
  name: "falcon-spmd" family: FALCON vocab_size: 30
  make_vocab_size_divisible_by: 16 hidden: 16 layers: 2 heads: 4 kv_heads: 1
  seq_len: 8 micro_batch: 4 dropout: 0.1
)pb";

/// The model's microbatch graph (forward + backward) in f64.
Graph microbatchGraph(const char *specText) {
  auto spec = parseModelSpec(specText, "spec");
  EXPECT_TRUE(bool(spec)) << toString(spec.takeError());
  Graph g = buildModelGraph(resolveModelSpec(*spec));
  EXPECT_FALSE(bool(differentiate(g)));
  for (size_t v = 0; v < g.numValues(); ++v)
    if (g.value(v).type.dtype == DType::F32)
      g.value(v).type.dtype = DType::F64;
  for (size_t n = 0; n < g.nodes().size(); ++n)
    if (g.node(n).attrs.getString("dtype") == "f32")
      g.node(n).attrs.set("dtype", std::string("f64"));
  return g;
}

/// Random params (std 0.5, so every path matters) and token ids.
std::vector<HostTensor> randomInputs(const Graph &g) {
  std::mt19937_64 rng(1234);
  std::normal_distribution<double> normal(0.0, 0.5);
  std::vector<HostTensor> ins;
  for (ValueId v : g.inputs()) {
    HostTensor t(g.type(v));
    bool ids = t.dtype() == DType::I32;
    std::uniform_int_distribution<int64_t> token(0, 29);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.set(i, ids ? double(token(rng)) : normal(rng));
    ins.push_back(std::move(t));
  }
  return ins;
}

struct Case {
  const char *name;
  const char *spec;
  MegatronSeedOptions options;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class SpmdNumeric : public testing::TestWithParam<Case> {};

TEST_P(SpmdNumeric, MatchesSerialLossAndGradients) {
  const Case &c = GetParam();
  Graph serial = microbatchGraph(c.spec);
  Graph parallel = serial;
  ASSERT_FALSE(bool(seedMegatron(parallel, c.options)));
  auto changed = createSpmdPass()->run(parallel);
  ASSERT_TRUE(bool(changed)) << toString(changed.takeError());
  if (auto e = verifyGraph(parallel))
    FAIL() << toString(std::move(e));

  std::vector<HostTensor> inputs = randomInputs(serial);
  auto want = spmdtest::simulate(serial, inputs, /*seed=*/7);
  ASSERT_TRUE(bool(want)) << toString(want.takeError());
  auto got = spmdtest::simulate(parallel, inputs, /*seed=*/7);
  ASSERT_TRUE(bool(got)) << toString(got.takeError());
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < want->size(); ++o) {
    const std::string &name = serial.value(serial.outputs()[o]).name;
    const HostTensor &w = (*want)[o], &a = (*got)[o];
    ASSERT_EQ(a.type(), w.type()) << name;
    double scale = 0, worst = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < w.numElements(); ++i)
      scale = std::max(scale, std::abs(w.get(i)));
    for (int64_t i = 0; i < w.numElements(); ++i)
      if (double d = std::abs(a.get(i) - w.get(i)); d > worst)
        worst = d, at = i;
    EXPECT_LE(worst, 1e-10 * std::max(scale, 1e-3))
        << name << ": element " << at << " is " << a.get(at) << ", serial "
        << w.get(at);
    EXPECT_GT(scale, 0.0) << name << " is all zeros (the check would be empty)";
  }
}

MegatronSeedOptions opts(int64_t tp, int64_t dp, bool sp) {
  MegatronSeedOptions o;
  o.tp = tp;
  o.dp = dp;
  o.sp = sp;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    Configs, SpmdNumeric,
    testing::Values(Case{"gpt_tp2", kGpt, opts(2, 1, false)},
                    Case{"gpt_tp4", kGpt, opts(4, 1, false)},
                    Case{"gpt_tp2_sp", kGpt, opts(2, 1, true)},
                    Case{"gpt_dp2", kGpt, opts(1, 2, false)},
                    Case{"gpt_tp2_dp2", kGpt, opts(2, 2, false)},
                    Case{"gpt_tp2_dp2_sp", kGpt, opts(2, 2, true)},
                    Case{"gpt_tp4_dp2_sp", kGpt, opts(4, 2, true)},
                    Case{"gpt_dp4", kGpt, opts(1, 4, false)},
                    Case{"gpt_untied_tp2_sp", kGptUntied, opts(2, 1, true)},
                    Case{"llama_tp2", kLlama, opts(2, 1, false)},
                    Case{"llama_tp2_sp", kLlama, opts(2, 1, true)},
                    Case{"llama_tp2_dp2", kLlama, opts(2, 2, false)},
                    Case{"llama_tp2_dp2_sp", kLlama, opts(2, 2, true)},
                    // KV heads replicated: 2 over tp 4, 1 over tp 2 and 4.
                    Case{"llama_tp4_kv_replicated", kLlama, opts(4, 1, false)},
                    Case{"llama_tp4_dp2_sp_kv_replicated", kLlama,
                         opts(4, 2, true)},
                    Case{"falcon7b_tp2_sp", kFalcon7b, opts(2, 1, true)},
                    Case{"falcon7b_tp4_dp2", kFalcon7b, opts(4, 2, false)}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace strata
