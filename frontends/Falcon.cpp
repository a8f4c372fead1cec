//===- Falcon.cpp - Falcon logical forward graph --------------------------===//
//
// docs/models.md, "Falcon": token embedding only (rotate-half RoPE on q and
// k), blocks whose attention and GELU (erf) MLP both read the block input
// through LayerNorm and are added to the residual together, multi-query or
// grouped KV heads, no linear biases, final LayerNorm, LM head tied to the
// embedding unless tie_embeddings is false. norms_per_block 1 is Falcon-7B's
// single input_layernorm; 2 is new_decoder_architecture's ln_attn / ln_mlp.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelBuilder.h"
#include "frontends/Models.h"

namespace strata {

namespace {

ValueId layerNorm(ModelBuilder &m, ValueId x, const std::string &prefix) {
  int64_t h = m.config().hidden;
  m.setScope(prefix);
  ValueId w = m.ones(prefix + ".w", {h});
  ValueId b = m.zeros(prefix + ".b", {h});
  return m.op(OpKind::LayerNorm, {x, w, b}, {{"eps", m.config().normEps}});
}

/// x @ w for `<prefix>.w` [in,out], in scope `prefix`.
ValueId linear(ModelBuilder &m, ValueId x, const std::string &prefix,
               int64_t in, int64_t out, double std) {
  m.setScope(prefix);
  return m.matmul(x, m.normal(prefix + ".w", {in, out}, std));
}

/// One parallel block; `p` is `layers.i`. Returns the new residual stream.
ValueId block(ModelBuilder &m, ValueId x, const std::string &p) {
  const ModelConfig &c = m.config();
  int64_t B = c.microBatch, S = c.seq, H = c.hidden, D = c.headDim;
  double std = c.initStd;

  // h feeds attention; the MLP reads h too, or its own norm of x.
  ValueId h = layerNorm(m, x, p + ".ln1");
  ValueId hm = c.normsPerBlock == 2 ? layerNorm(m, x, p + ".ln2") : h;
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

  // f = gelu(hm @ fc1.w) @ fc2.w, exact (erf) GELU as torch.nn.GELU().
  ValueId f = linear(m, hm, p + ".mlp.fc1", H, c.ffn, std);
  m.setScope(p + ".mlp.act");
  f = m.op(OpKind::Gelu, {f}, {{"approx", std::string("none")}});
  f = linear(m, f, p + ".mlp.fc2", c.ffn, H, m.scaledStd());

  // x = x + dropout(a + f)
  m.setScope(p + ".parallel");
  ValueId y = m.op(OpKind::Add, {a, f});
  m.setScope(p + ".dropout");
  y = m.dropout(y);
  m.setScope(p + ".residual");
  return m.op(OpKind::Add, {x, y});
}

} // namespace

Graph buildFalcon(const ModelConfig &c) {
  Graph g;
  g.name = "falcon";
  ModelBuilder m(g, c);

  m.setScope("embed");
  ValueId wte = m.normal("wte", {c.paddedVocab, c.hidden}, c.initStd);
  ValueId x = m.op(OpKind::Gather, {wte, m.tokens()});

  for (int64_t i = 0; i < c.layers; ++i)
    x = block(m, x, "layers." + std::to_string(i));

  x = layerNorm(m, x, "ln_f");
  m.lmHeadLoss(x, wte);
  return g;
}

} // namespace strata
