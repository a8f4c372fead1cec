//===- Llama.cpp - Llama logical forward graph ----------------------------===//
//
// docs/models.md, "Llama": token embedding only (positions via rotate-half
// RoPE on q and k), pre-RMSNorm blocks, grouped-query attention, SwiGLU MLP,
// no biases, untied LM head `lm_head.w` [H,Vp] (tied to wte^T when
// tie_embeddings is set).
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelBuilder.h"
#include "frontends/Models.h"

namespace strata {

namespace {

ValueId rmsNorm(ModelBuilder &m, ValueId x, const std::string &prefix) {
  m.setScope(prefix);
  ValueId w = m.ones(prefix + ".w", {m.config().hidden});
  return m.op(OpKind::RmsNorm, {x, w}, {{"eps", m.config().normEps}});
}

/// x @ w for `<prefix>.w` [in,out], in scope `prefix`.
ValueId linear(ModelBuilder &m, ValueId x, const std::string &prefix,
               int64_t in, int64_t out, double std) {
  m.setScope(prefix);
  return m.matmul(x, m.normal(prefix + ".w", {in, out}, std));
}

/// One pre-norm block; `p` is `layers.i`. Returns the new residual stream.
ValueId block(ModelBuilder &m, ValueId x, const std::string &p) {
  const ModelConfig &c = m.config();
  int64_t B = c.microBatch, S = c.seq, H = c.hidden, D = c.headDim;
  double std = c.initStd;

  // x = x + dropout(attention(rope(q), rope(k), v) @ o.w)
  ValueId h = rmsNorm(m, x, p + ".ln1");
  auto heads = [&](const char *name, int64_t n, bool rope) {
    ValueId y = linear(m, h, p + ".attn." + name, H, n * D, std);
    y = m.reshape(y, {B, S, n, D});
    return rope ? m.rope(y) : y;
  };
  ValueId q = heads("q", c.heads, true);
  ValueId k = heads("k", c.kvHeads, true);
  ValueId v = heads("v", c.kvHeads, false);
  m.setScope(p + ".attn");
  ValueId a = m.attention(q, k, v);
  a = linear(m, a, p + ".attn.o", c.heads * D, H, m.scaledStd());
  m.setScope(p + ".attn.dropout");
  a = m.dropout(a);
  m.setScope(p + ".attn.residual");
  x = m.op(OpKind::Add, {x, a});

  // x = x + dropout((silu(h @ gate.w) * (h @ up.w)) @ down.w), h = ln2(x)
  h = rmsNorm(m, x, p + ".ln2");
  ValueId gate = linear(m, h, p + ".mlp.gate", H, c.ffn, std);
  gate = m.op(OpKind::Silu, {gate});
  ValueId up = linear(m, h, p + ".mlp.up", H, c.ffn, std);
  m.setScope(p + ".mlp.act");
  h = m.op(OpKind::Mul, {gate, up});
  h = linear(m, h, p + ".mlp.down", c.ffn, H, m.scaledStd());
  m.setScope(p + ".mlp.dropout");
  h = m.dropout(h);
  m.setScope(p + ".mlp.residual");
  return m.op(OpKind::Add, {x, h});
}

} // namespace

Graph buildLlama(const ModelConfig &c) {
  Graph g;
  g.name = "llama";
  ModelBuilder m(g, c);

  m.setScope("embed");
  ValueId wte = m.normal("wte", {c.paddedVocab, c.hidden}, c.initStd);
  ValueId x = m.dropout(m.op(OpKind::Gather, {wte, m.tokens()}));

  for (int64_t i = 0; i < c.layers; ++i)
    x = block(m, x, "layers." + std::to_string(i));

  x = rmsNorm(m, x, "ln_f");
  m.lmHeadLoss(x, wte);
  return g;
}

} // namespace strata
