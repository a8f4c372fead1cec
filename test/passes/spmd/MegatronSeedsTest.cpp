//===- MegatronSeedsTest.cpp - Megatron's layout on the frontends' graphs
//--===//
//
// The seeding rules go by parameter name, so they are checked against the
// names the GPT and Llama frontends actually produce: every input gets the
// documented layout, sequence parallelism annotates every norm's input and
// output, and a rejected configuration leaves the graph untouched.
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "ir/IRText.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/spmd/ShardingUtil.h"
#include "passes/spmd/Spmd.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

Graph modelGraph(const char *specText) {
  auto spec = parseModelSpec(specText, "spec");
  EXPECT_TRUE(bool(spec)) << toString(spec.takeError());
  Graph g = buildModelGraph(resolveModelSpec(*spec));
  EXPECT_FALSE(bool(differentiate(g)));
  return g;
}

/// The layout Megatron-LM gives an input (tp=2, dp=2), spelled out per name.
std::string expected(const Value &in) {
  llvm::StringRef name = in.name;
  auto endsWithAny = [&](std::initializer_list<const char *> suffixes) {
    return llvm::any_of(suffixes,
                        [&](const char *s) { return name.endswith(s); });
  };
  if (!in.isParam())
    return "shard=[dp,_]"; // tokens, labels [B,S]
  if (name == "wte")
    return "shard=[tp,_]";
  if (name == "lm_head.w")
    return "shard=[_,tp]";
  if (endsWithAny({".attn.q.w", ".attn.k.w", ".attn.v.w", ".mlp.fc1.w",
                   ".mlp.gate.w", ".mlp.up.w"}))
    return "shard=[_,tp]";
  if (endsWithAny({".attn.q.b", ".attn.k.b", ".attn.v.b", ".mlp.fc1.b"}))
    return "shard=[tp]";
  if (endsWithAny({".attn.o.w", ".mlp.fc2.w", ".mlp.down.w"}))
    return "shard=[tp,_]";
  // Norms, row-parallel biases, wpe: whole.
  return in.type.rank() == 1 ? "shard=[_]" : "shard=[_,_]";
}

struct Family {
  const char *name;
  const char *spec;
};

class SeedsOnModels : public testing::TestWithParam<Family> {};

TEST_P(SeedsOnModels, EveryInputGetsMegatronsLayout) {
  Graph g = modelGraph(GetParam().spec);
  MegatronSeedOptions o;
  o.tp = 2;
  o.dp = 2;
  ASSERT_FALSE(bool(seedMegatron(g, o)));
  ASSERT_TRUE(g.mesh.has_value());
  EXPECT_EQ(*g.mesh, (Mesh{{{"dp", 2}, {"tp", 2}}}));
  for (ValueId v : g.inputs()) {
    const Value &in = g.value(v);
    ASSERT_TRUE(in.sharding) << in.name;
    EXPECT_EQ(spmd::shardingStr(*in.sharding), expected(in)) << in.name;
  }
}

TEST_P(SeedsOnModels, SequenceParallelAnnotatesEveryNorm) {
  Graph g = modelGraph(GetParam().spec);
  MegatronSeedOptions o;
  o.tp = 2;
  o.sp = true;
  ASSERT_FALSE(bool(seedMegatron(g, o)));
  int norms = 0;
  for (const Node &n : g.nodes()) {
    if ((n.op != OpKind::LayerNorm && n.op != OpKind::RmsNorm) || isBackward(n))
      continue;
    ++norms;
    for (ValueId v : {n.operands[0], n.results[0]}) {
      ASSERT_TRUE(g.value(v).sharding) << g.value(v).name;
      EXPECT_EQ(spmd::shardingStr(*g.value(v).sharding), "shard=[_,tp,_]")
          << g.value(v).name;
    }
  }
  EXPECT_EQ(norms, 2 * 2 + 1); // two per layer and the final one
}

TEST_P(SeedsOnModels, RejectedConfigLeavesTheGraphAlone) {
  Graph g = modelGraph(GetParam().spec);
  std::string before = graphToString(g);
  MegatronSeedOptions o;
  o.tp = 3; // 4 heads
  llvm::Error e = seedMegatron(g, o);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(toString(std::move(e)).find("not divisible by tp 3"),
            std::string::npos);
  EXPECT_EQ(graphToString(g), before);
}

INSTANTIATE_TEST_SUITE_P(
    Models, SeedsOnModels,
    testing::Values(Family{"gpt", R"pb(name: "g" family: GPT vocab_size: 30
                           make_vocab_size_divisible_by: 16 hidden: 16
                           layers: 2 heads: 4 seq_len: 8 micro_batch: 4)pb"},
                    Family{"gpt_untied",
                           R"pb(name: "g" family: GPT vocab_size: 30
                    make_vocab_size_divisible_by: 16 hidden: 16 layers: 2
                    heads: 4 seq_len: 8 micro_batch: 4 tie_embeddings: false)pb"},
                    Family{"llama", R"pb(name: "l" family: LLAMA vocab_size: 30
                             make_vocab_size_divisible_by: 16 hidden: 16
                             layers: 2 heads: 4 kv_heads: 2 ffn: 24 seq_len: 8
                             micro_batch: 4)pb"}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace strata

namespace strata {
namespace {

/// Each layout constraint of the issue, violated alone: the error names the
/// constraint (what is not divisible by what) and the fix.
struct BadLayout {
  const char *name;
  const char *spec;
  int64_t tp, dp;
  bool sp;
  const char *constraint;
  const char *fix;
};

class RejectsLayout : public testing::TestWithParam<BadLayout> {};

TEST_P(RejectsLayout, NamesTheConstraintAndTheFix) {
  const BadLayout &b = GetParam();
  Graph g = modelGraph(b.spec);
  MegatronSeedOptions o;
  o.tp = b.tp;
  o.dp = b.dp;
  o.sp = b.sp;
  llvm::Error e = seedMegatron(g, o);
  ASSERT_TRUE(bool(e));
  std::string msg = toString(std::move(e));
  EXPECT_NE(msg.find(b.constraint), std::string::npos) << msg;
  EXPECT_NE(msg.find(b.fix), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Constraints, RejectsLayout,
    testing::Values(
        BadLayout{
            "heads",
            R"pb(family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
                       hidden: 16 layers: 1 heads: 4 seq_len: 8 micro_batch: 4)pb",
            8, 1, false,
            "attention heads 4 (layers.0.attn) not divisible by tp 8",
            "use a tp that divides 4"},
        BadLayout{
            "kv_heads",
            // 3 KV heads over tp 4: neither whole groups nor replicas.
            R"pb(family: LLAMA vocab_size: 30 make_vocab_size_divisible_by: 16
                       hidden: 24 layers: 1 heads: 12 kv_heads: 3 ffn: 24
                       seq_len: 8 micro_batch: 4)pb",
            4, 1, false,
            "KV heads 3 (layers.0.attn) neither divisible by tp 4 nor dividing "
            "it",
            "use a tp that divides 3 or a multiple of 3 dividing 12"},
        BadLayout{
            "ffn",
            R"pb(family: LLAMA vocab_size: 30 make_vocab_size_divisible_by: 16
                       hidden: 16 layers: 1 heads: 4 kv_heads: 4 ffn: 30
                       seq_len: 8 micro_batch: 4)pb",
            4, 1, false, ": 30 not divisible by tp 4",
            "use a tp that divides 30"},
        BadLayout{
            "padded_vocab",
            R"pb(family: GPT vocab_size: 30 make_vocab_size_divisible_by: 2
                       hidden: 16 layers: 1 heads: 4 seq_len: 8 micro_batch: 4)pb",
            4, 1, false, "30 not divisible by tp 4",
            "set make_vocab_size_divisible_by to a multiple of tp"},
        BadLayout{
            "batch",
            R"pb(family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
                       hidden: 16 layers: 1 heads: 4 seq_len: 8 micro_batch: 3)pb",
            1, 2, false, "batch 3 of %tokens not divisible by dp 2",
            "use a micro-batch size divisible by 2"},
        BadLayout{
            "sequence",
            R"pb(family: GPT vocab_size: 30 make_vocab_size_divisible_by: 16
                       hidden: 16 layers: 1 heads: 4 seq_len: 6 micro_batch: 4)pb",
            4, 1, true, "sequence length 6 not divisible by tp 4", "or sp=0"}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace strata
