//===- GPT.cpp - GPT-2 logical forward graph ------------------------------===//
//
// docs/models.md, "GPT": learned token + position embeddings, pre-LayerNorm
// blocks with GELU(tanh) MLPs and biases, final LayerNorm, LM head tied to the
// token embedding (or `lm_head.w` [H,Vp] when tie_embeddings is false).
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelBuilder.h"
#include "frontends/Models.h"

namespace strata {

namespace {

/// y = x @ w + b for a linear layer `<prefix>.w` [in,out], `<prefix>.b` [out],
/// in scope `prefix`.
ValueId linear(ModelBuilder &m, ValueId x, const std::string &prefix,
               int64_t in, int64_t out, double std) {
  m.setScope(prefix);
  ValueId w = m.normal(prefix + ".w", {in, out}, std);
  ValueId b = m.zeros(prefix + ".b", {out});
  return m.op(OpKind::Add, {m.matmul(x, w), b});
}

ValueId layerNorm(ModelBuilder &m, ValueId x, const std::string &prefix) {
  int64_t h = m.config().hidden;
  m.setScope(prefix);
  ValueId w = m.ones(prefix + ".w", {h});
  ValueId b = m.zeros(prefix + ".b", {h});
  return m.op(OpKind::LayerNorm, {x, w, b}, {{"eps", m.config().normEps}});
}

/// One pre-LN block; `p` is `layers.i`. Returns the new residual stream.
ValueId block(ModelBuilder &m, ValueId x, const std::string &p) {
  const ModelConfig &c = m.config();
  int64_t B = c.microBatch, S = c.seq, H = c.hidden, nh = c.heads;
  double std = c.initStd;

  // x = x + dropout(attention(ln1(x)) @ o.w + o.b)
  ValueId h = layerNorm(m, x, p + ".ln1");
  auto heads = [&](const char *name) {
    std::string scope = p + ".attn." + name;
    ValueId y = linear(m, h, scope, H, H, std);
    return m.reshape(y, {B, S, nh, c.headDim});
  };
  ValueId q = heads("q"), k = heads("k"), v = heads("v");
  m.setScope(p + ".attn");
  ValueId a = m.attention(q, k, v);
  a = linear(m, a, p + ".attn.o", H, H, m.scaledStd());
  m.setScope(p + ".attn.dropout");
  a = m.dropout(a);
  m.setScope(p + ".attn.residual");
  x = m.op(OpKind::Add, {x, a});

  // x = x + dropout(gelu(ln2(x) @ fc1.w + fc1.b) @ fc2.w + fc2.b)
  h = layerNorm(m, x, p + ".ln2");
  h = linear(m, h, p + ".mlp.fc1", H, c.ffn, std);
  m.setScope(p + ".mlp.act");
  h = m.op(OpKind::Gelu, {h}, {{"approx", std::string("tanh")}});
  h = linear(m, h, p + ".mlp.fc2", c.ffn, H, m.scaledStd());
  m.setScope(p + ".mlp.dropout");
  h = m.dropout(h);
  m.setScope(p + ".mlp.residual");
  return m.op(OpKind::Add, {x, h});
}

} // namespace

Graph buildGPT(const ModelConfig &c) {
  Graph g;
  g.name = "gpt";
  ModelBuilder m(g, c);
  int64_t H = c.hidden;

  // x = dropout(wte[tokens] + wpe); wpe [S,H] broadcasts over the batch.
  m.setScope("embed");
  ValueId wte = m.normal("wte", {c.paddedVocab, H}, c.initStd);
  ValueId wpe = m.normal("wpe", {c.seq, H}, c.initStd);
  ValueId x = m.op(OpKind::Gather, {wte, m.tokens()});
  x = m.dropout(m.op(OpKind::Add, {x, wpe}));

  for (int64_t i = 0; i < c.layers; ++i)
    x = block(m, x, "layers." + std::to_string(i));

  x = layerNorm(m, x, "ln_f");
  m.lmHeadLoss(x, wte);
  return g;
}

Graph buildModelGraph(const ModelConfig &c) {
  return c.isGPT()      ? buildGPT(c)
         : c.isFalcon() ? buildFalcon(c)
                        : buildLlama(c);
}

} // namespace strata
