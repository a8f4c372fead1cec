//===- ModelGraphTest.cpp - The GPT and Llama graphs, read as IR text -----===//
//
// One-layer models printed as IR text: the sequence of ops with their scopes
// must be exactly docs/models.md's forward, and key lines (params with their
// init, attention, rope, dropout, loss) must read as written here.
//
//===----------------------------------------------------------------------===//
#include "TestSpecs.h"

#include "ir/IRText.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Regex.h"

using namespace strata;
using namespace strata::test;

namespace {

/// "op  # scope" for each node line of IR text, in order.
std::vector<std::string> opsWithScopes(const std::string &ir) {
  static const llvm::Regex node("= ([a-z_]+)\\(.*  # (.*)$");
  std::vector<std::string> out;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  llvm::SplitString(ir, lines, "\n");
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 3> m;
    if (node.match(line, &m))
      out.push_back((m[1] + "  # " + m[2]).str());
  }
  return out;
}

bool hasLine(const std::string &ir, llvm::StringRef want) {
  llvm::SmallVector<llvm::StringRef, 0> lines;
  llvm::SplitString(ir, lines, "\n");
  for (llvm::StringRef line : lines)
    if (line.trim().rtrim(',') == want)
      return true;
  return false;
}

TEST(ModelGraph, GPTBlockMatchesTheModelDefinition) {
  Graph g = buildFromText(kTinyGPT);
  ASSERT_FALSE(bool(verifyGraph(g)));
  std::string ir = graphToString(g);
  std::vector<std::string> want = {
      "gather  # embed",
      "add  # embed",
      "dropout  # embed",
      "layer_norm  # layers.0.ln1",
      "matmul  # layers.0.attn.q",
      "add  # layers.0.attn.q",
      "reshape  # layers.0.attn.q",
      "matmul  # layers.0.attn.k",
      "add  # layers.0.attn.k",
      "reshape  # layers.0.attn.k",
      "matmul  # layers.0.attn.v",
      "add  # layers.0.attn.v",
      "reshape  # layers.0.attn.v",
      "attention  # layers.0.attn",
      "reshape  # layers.0.attn",
      "matmul  # layers.0.attn.o",
      "add  # layers.0.attn.o",
      "dropout  # layers.0.attn.dropout",
      "add  # layers.0.attn.residual",
      "layer_norm  # layers.0.ln2",
      "matmul  # layers.0.mlp.fc1",
      "add  # layers.0.mlp.fc1",
      "gelu  # layers.0.mlp.act",
      "matmul  # layers.0.mlp.fc2",
      "add  # layers.0.mlp.fc2",
      "dropout  # layers.0.mlp.dropout",
      "add  # layers.0.mlp.residual",
      "layer_norm  # ln_f",
      "matmul  # lm_head",
      "cross_entropy  # loss",
  };
  EXPECT_EQ(opsWithScopes(ir), want) << ir;

  for (
      const char *line : {
          "graph @gpt(",
          "%tokens: i32[2,16] {vocab=60}",
          "%labels: i32[2,16] {vocab=60}",
          "%wte: f32[128,32] {init=\"normal\", param, std=0.02}",
          "%wpe: f32[16,32] {init=\"normal\", param, std=0.02}",
          "%layers.0.ln1.w: f32[32] {init=\"ones\", param}",
          "%layers.0.ln1.b: f32[32] {init=\"zeros\", param}",
          "%layers.0.attn.q.w: f32[32,32] {init=\"normal\", param, std=0.02}",
          // 0.02 / sqrt(2 * 1 layer)
          "%layers.0.attn.o.w: f32[32,32] {init=\"normal\", param, "
          "std=0.014142135623730949}",
          "%layers.0.mlp.fc1.w: f32[32,128] {init=\"normal\", param, std=0.02}",
          "%layers.0.mlp.fc2.w: f32[128,32] {init=\"normal\", param, "
          "std=0.014142135623730949}",
          "%ln_f.b: f32[32] {init=\"zeros\", param}) {",
          "%embed.add = add(%embed.gather, %wpe) : f32[2,16,32]  # embed",
          "%embed.dropout = dropout(%embed.add) {p=0.1, stream=0} : "
          "f32[2,16,32]  # embed",
          "%layers.0.attn.attention = attention(%layers.0.attn.q.reshape, "
          "%layers.0.attn.k.reshape, %layers.0.attn.v.reshape) {causal=true, "
          "scale=0.35355339059327373} : f32[2,16,4,8]  # layers.0.attn",
          "%layers.0.attn.dropout.dropout = dropout(%layers.0.attn.o.add) "
          "{p=0.1, stream=1} : f32[2,16,32]  # layers.0.attn.dropout",
          "%layers.0.mlp.act.gelu = gelu(%layers.0.mlp.fc1.add) "
          "{approx=\"tanh\"} : f32[2,16,128]  # layers.0.mlp.act",
          "%layers.0.mlp.dropout.dropout = dropout(%layers.0.mlp.fc2.add) "
          "{p=0.1, stream=2} : f32[2,16,32]  # layers.0.mlp.dropout",
          "%lm_head.matmul = matmul(%ln_f.layer_norm, %wte) {transpose_b=true} "
          ": f32[2,16,128]  # lm_head",
          "%loss.cross_entropy = cross_entropy(%lm_head.matmul, %labels) : "
          "f32[]  # loss",
          "return %loss.cross_entropy",
      })
    EXPECT_TRUE(hasLine(ir, line)) << "missing line: " << line << "\n" << ir;
}

TEST(ModelGraph, LlamaBlockMatchesTheModelDefinition) {
  Graph g = buildFromText(kTinyLlama);
  ASSERT_FALSE(bool(verifyGraph(g)));
  std::string ir = graphToString(g);
  std::vector<std::string> want = {
      "gather  # embed",
      "rms_norm  # layers.0.ln1",
      "matmul  # layers.0.attn.q",
      "reshape  # layers.0.attn.q",
      "rope  # layers.0.attn.q",
      "matmul  # layers.0.attn.k",
      "reshape  # layers.0.attn.k",
      "rope  # layers.0.attn.k",
      "matmul  # layers.0.attn.v",
      "reshape  # layers.0.attn.v",
      "attention  # layers.0.attn",
      "reshape  # layers.0.attn",
      "matmul  # layers.0.attn.o",
      "add  # layers.0.attn.residual",
      "rms_norm  # layers.0.ln2",
      "matmul  # layers.0.mlp.gate",
      "silu  # layers.0.mlp.gate",
      "matmul  # layers.0.mlp.up",
      "mul  # layers.0.mlp.act",
      "matmul  # layers.0.mlp.down",
      "add  # layers.0.mlp.residual",
      "rms_norm  # ln_f",
      "matmul  # lm_head",
      "cross_entropy  # loss",
  };
  EXPECT_EQ(opsWithScopes(ir), want) << ir;

  for (const char *line : {
           "graph @llama(",
           "%wte: f32[128,32] {init=\"normal\", param, std=0.02}",
           "%layers.0.attn.k.w: f32[32,16] {init=\"normal\", param, std=0.02}",
           "%layers.0.attn.o.w: f32[32,32] {init=\"normal\", param, "
           "std=0.014142135623730949}",
           "%layers.0.mlp.gate.w: f32[32,88] {init=\"normal\", param, "
           "std=0.02}",
           "%layers.0.mlp.down.w: f32[88,32] {init=\"normal\", param, "
           "std=0.014142135623730949}",
           "%lm_head.w: f32[32,128] {init=\"normal\", param, std=0.02}) {",
           "%layers.0.attn.q.rope = rope(%layers.0.attn.q.reshape) "
           "{theta=10000.0} : f32[2,16,4,8]  # layers.0.attn.q",
           "%layers.0.attn.k.rope = rope(%layers.0.attn.k.reshape) "
           "{theta=10000.0} : f32[2,16,2,8]  # layers.0.attn.k",
           "%layers.0.attn.attention = attention(%layers.0.attn.q.rope, "
           "%layers.0.attn.k.rope, %layers.0.attn.v.reshape) {causal=true, "
           "scale=0.35355339059327373} : f32[2,16,4,8]  # layers.0.attn",
           "%layers.0.mlp.act.mul = mul(%layers.0.mlp.gate.silu, "
           "%layers.0.mlp.up.matmul) : f32[2,16,88]  # layers.0.mlp.act",
           "%lm_head.matmul = matmul(%ln_f.rms_norm, %lm_head.w) : "
           "f32[2,16,128]  # lm_head",
       })
    EXPECT_TRUE(hasLine(ir, line)) << "missing line: " << line << "\n" << ir;
}

TEST(ModelGraph, NoDropoutNodesWhenPIsZero) {
  std::string ir = graphToString(buildFromText(
      "family: GPT vocab_size: 60 hidden: 32 layers: 2 heads: 4 seq_len: 16"));
  EXPECT_EQ(ir.find("dropout"), std::string::npos) << ir;
}

TEST(ModelGraph, EachDropoutSiteHasItsOwnStream) {
  Graph g = buildFromText(
      "family: LLAMA vocab_size: 60 hidden: 32 layers: 3 heads: 4 "
      "seq_len: 16 dropout: 0.2");
  std::vector<int64_t> streams;
  for (const Node &n : g.nodes())
    if (n.op == OpKind::Dropout) {
      EXPECT_EQ(n.attrs.getFloat("p"), 0.2);
      streams.push_back(n.attrs.getInt("stream"));
    }
  // Embedding + 2 per layer, numbered in graph order.
  std::vector<int64_t> want = {0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(streams, want);
}

TEST(ModelGraph, UntiedGPTHasAnLMHeadAndTiedLlamaHasNone) {
  Graph gpt = buildFromText(std::string(kTinyGPT) + "tie_embeddings: false");
  EXPECT_NE(gpt.lookup("lm_head.w"), kNoValue);
  EXPECT_TRUE(hasLine(graphToString(gpt),
                      "%lm_head.matmul = matmul(%ln_f.layer_norm, %lm_head.w) "
                      ": f32[2,16,128]  # lm_head"));
  Graph llama = buildFromText(std::string(kTinyLlama) + "tie_embeddings: true");
  EXPECT_EQ(llama.lookup("lm_head.w"), kNoValue);
  EXPECT_TRUE(hasLine(graphToString(llama),
                      "%lm_head.matmul = matmul(%ln_f.rms_norm, %wte) "
                      "{transpose_b=true} : f32[2,16,128]  # lm_head"));
}

TEST(ModelGraph, ExamplesBuildValidGraphsEndingInAScalarLoss) {
  for (const char *name :
       {"gpt_tiny", "gpt2_124m", "gpt2_1.5b", "llama2_7b", "llama_tiny"}) {
    Graph g = buildModelGraph(resolveModelSpec(loadExample(name)));
    llvm::Error e = verifyGraph(g);
    EXPECT_FALSE(bool(e)) << name << ": " << toString(std::move(e));
    ASSERT_EQ(g.outputs().size(), 1u) << name;
    EXPECT_EQ(g.type(g.outputs()[0]).rank(), 0) << name;
    EXPECT_EQ(g.value(g.inputs()[0]).name, "tokens") << name;
    EXPECT_EQ(g.value(g.inputs()[1]).name, "labels") << name;
  }
}

} // namespace
