//===- OptimizerGraph.cpp - Builds the AdamW optimizer-step graph
//----------===//
#include "passes/optimizer/OptimizerGraph.h"

#include "ir/Builder.h"

namespace strata {

namespace {
/// The dtype the global norm is computed in: the params' dtype if they all
/// share one, f32 otherwise.
DType normDType(const Graph &mb, llvm::ArrayRef<ValueId> params) {
  if (params.empty())
    return DType::F32;
  DType dt = mb.type(params[0]).dtype;
  for (ValueId p : params)
    if (mb.type(p).dtype != dt)
      return DType::F32;
  return dt;
}

ValueId castTo(Builder &b, ValueId v, DType dt) {
  if (b.graph().type(v).dtype == dt)
    return v;
  return b.create1(OpKind::Cast, {v}, {{"dtype", dtypeName(dt).str()}});
}

ValueId addInputLike(Graph &g, const Value &like, const std::string &name,
                     Attrs attrs) {
  ValueId v = g.addInput(name, like.type, std::move(attrs));
  g.value(v).sharding = like.sharding;
  return v;
}
} // namespace

Graph buildOptimizerGraph(const Graph &mb, const OptimizerConfig &cfg) {
  Graph g;
  g.name = mb.name.empty() ? "optimizer" : mb.name + "_optimizer";
  g.mesh = mb.mesh;
  llvm::SmallVector<ValueId> mbParams = mb.params();
  size_t n = mbParams.size();

  // Inputs: params, grads, first and second moments, lr, step.
  llvm::SmallVector<ValueId> p, grad, m, v;
  for (ValueId q : mbParams)
    p.push_back(
        addInputLike(g, mb.value(q), mb.value(q).name, mb.value(q).attrs));
  for (ValueId q : mbParams)
    grad.push_back(
        addInputLike(g, mb.value(q), "grad." + mb.value(q).name, {}));
  for (ValueId q : mbParams)
    m.push_back(addInputLike(g, mb.value(q), "adam_m." + mb.value(q).name,
                             {{"init", std::string("zeros")}}));
  for (ValueId q : mbParams)
    v.push_back(addInputLike(g, mb.value(q), "adam_v." + mb.value(q).name,
                             {{"init", std::string("zeros")}}));
  ValueId lr = g.addInput("lr", TensorType{DType::F32, {}});
  ValueId step = g.addInput("step", TensorType{DType::F32, {}});

  // Global grad norm: sqrt of the sum over params of sum(g^2).
  Builder b(g);
  DType dt = normDType(mb, mbParams);
  auto constant = [&](double value, llvm::StringRef name) {
    return b.create1(OpKind::Fill, {},
                     {{"value", value},
                      {"shape", IntList{}},
                      {"dtype", dtypeName(dt).str()}},
                     name);
  };
  ValueId sumsq = kNoValue;
  for (size_t i = 0; i < n; ++i) {
    const std::string &name = mb.value(mbParams[i]).name;
    b.setScope("optimizer." + name);
    ValueId sq = b.create1(OpKind::Square, {grad[i]}, {}, "sq." + name);
    ValueId s =
        castTo(b, b.create1(OpKind::ReduceSum, {sq}, {}, "sumsq." + name), dt);
    b.setScope("optimizer.grad_norm");
    sumsq =
        sumsq == kNoValue
            ? s
            : b.create1(OpKind::Add, {sumsq, s}, {},
                        i + 1 == n ? "sumsq" : "sumsq.acc" + std::to_string(i));
  }
  b.setScope("optimizer.grad_norm");
  if (sumsq == kNoValue)
    sumsq = constant(0.0, "sumsq");
  ValueId norm = b.create1(OpKind::Sqrt, {sumsq}, {}, "grad_norm");

  // Clip coefficient, exactly as torch.nn.utils.clip_grad_norm_.
  ValueId coef = kNoValue;
  if (cfg.grad_clip > 0) {
    b.setScope("optimizer.clip");
    ValueId denom = b.create1(OpKind::Add, {norm, constant(1e-6, "norm_eps")},
                              {}, "grad_norm_eps");
    ValueId raw =
        b.create1(OpKind::Div, {constant(cfg.grad_clip, "max_norm"), denom}, {},
                  "clip_coef");
    coef = b.create1(OpKind::Minimum, {raw, constant(1.0, "one")}, {},
                     "clip_coef_clamped");
  }

  llvm::SmallVector<ValueId> newP, newM, newV;
  for (size_t i = 0; i < n; ++i) {
    const std::string &name = mb.value(mbParams[i]).name;
    b.setScope("optimizer." + name);
    ValueId gi = grad[i];
    if (coef != kNoValue)
      gi = b.create1(OpKind::Mul, {gi, castTo(b, coef, g.type(gi).dtype)}, {},
                     "clipped." + name);
    double wd = g.type(p[i]).rank() >= 2 ? cfg.weight_decay : 0.0;
    auto r =
        b.create(OpKind::AdamWUpdate, {p[i], gi, m[i], v[i], lr, step},
                 {{"beta1", cfg.beta1},
                  {"beta2", cfg.beta2},
                  {"eps", cfg.eps},
                  {"weight_decay", wd}},
                 {"new." + name, "new.adam_m." + name, "new.adam_v." + name});
    newP.push_back(r[0]);
    newM.push_back(r[1]);
    newV.push_back(r[2]);
  }
  for (auto *group : {&newP, &newM, &newV})
    for (ValueId o : *group)
      g.addOutput(o);
  g.addOutput(norm);
  return g;
}

} // namespace strata
