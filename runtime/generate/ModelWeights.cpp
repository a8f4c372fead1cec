//===- ModelWeights.cpp - A checkpoint's parameters as per-layer views ----===//
#include "runtime/generate/ModelWeights.h"

#include "frontends/Models.h"

#include <cmath>

namespace strata::generate {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error checkFinite(llvm::StringRef name, const HostTensor &t) {
  if (t.dtype() != DType::F32 && t.dtype() != DType::F64)
    return llvm::Error::success();
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    if (!std::isfinite(t.get(i)))
      return err("parameter " + name + " holds a non-finite value (" +
                 std::to_string(t.get(i)) + " at element " + std::to_string(i) +
                 "; training diverged or the checkpoint is damaged: use an "
                 "earlier checkpoint)");
  return llvm::Error::success();
}

llvm::Expected<ModelWeights>
ModelWeights::bind(const ModelConfig &config,
                   const llvm::StringMap<const HostTensor *> &params) {
  // The graph's parameter inputs are the contract: names and types.
  ModelConfig c = config;
  c.microBatch = 1;
  c.dropout = 0;
  Graph g = buildModelGraph(c);
  llvm::StringMap<const float *> bound;
  for (ValueId v : g.inputs()) {
    const Value &val = g.value(v);
    if (val.name == "tokens" || val.name == "labels")
      continue;
    auto it = params.find(val.name);
    if (it == params.end())
      return err("the checkpoint has no parameter " + val.name + " (the " +
                 c.familyName() + " model of its spec needs " + val.type.str() +
                 ")");
    const HostTensor &t = *it->second;
    if (t.type() != val.type)
      return err("parameter " + val.name + " is " + t.type().str() +
                 ", the model of the spec wants " + val.type.str() +
                 " (generation reads f32 weights of the spec's sizes)");
    if (auto e = checkFinite(val.name, t))
      return e;
    bound[val.name] = t.data<float>();
  }
  auto at = [&](const std::string &name) -> const float * {
    auto it = bound.find(name);
    return it == bound.end() ? nullptr : it->second;
  };

  ModelWeights w;
  w.config = config;
  w.wte = at("wte");
  w.wpe = at("wpe");
  w.lnFW = at("ln_f.w");
  w.lnFB = at("ln_f.b");
  if (c.tieEmbeddings) {
    // logits = x @ wte^T: one transposed copy, [H, Vp].
    int64_t V = c.paddedVocab, H = c.hidden;
    w.headT_.resize(size_t(V * H));
    for (int64_t v = 0; v < V; ++v)
      for (int64_t h = 0; h < H; ++h)
        w.headT_[size_t(h * V + v)] = w.wte[v * H + h];
    w.head = w.headT_.data();
  } else {
    w.head = at("lm_head.w");
  }
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.ln1W = at(p + "ln1.w"), l.ln1B = at(p + "ln1.b");
    l.qW = at(p + "attn.q.w"), l.qB = at(p + "attn.q.b");
    l.kW = at(p + "attn.k.w"), l.kB = at(p + "attn.k.b");
    l.vW = at(p + "attn.v.w"), l.vB = at(p + "attn.v.b");
    l.oW = at(p + "attn.o.w"), l.oB = at(p + "attn.o.b");
    l.ln2W = at(p + "ln2.w"), l.ln2B = at(p + "ln2.b");
    l.fc1W = at(p + "mlp.fc1.w"), l.fc1B = at(p + "mlp.fc1.b");
    l.fc2W = at(p + "mlp.fc2.w"), l.fc2B = at(p + "mlp.fc2.b");
    l.gateW = at(p + "mlp.gate.w"), l.upW = at(p + "mlp.up.w");
    l.downW = at(p + "mlp.down.w");
    w.layers.push_back(l);
  }
  return w;
}

} // namespace strata::generate
