//===- NormAttention.cpp - Norms, softmax, attention and rope --------------===//
//
//  - layer_norm / rms_norm / softmax normalize the last dim: it must be
//    whole; the other dims keep any split (sequence parallelism runs the
//    norms on [dp,tp,_]). Weights and biases are whole.
//  - their gradients take x's layout (dy follows, so a partial dy is reduced
//    straight into x's layout: reduce_scatter under sequence parallelism,
//    all_reduce otherwise); dw and db sum over the rows, so they are partial
//    over the axes splitting the rows.
//  - attention[B,S,heads,D] splits by heads: q's head split is kept when the
//    KV heads divide by the same ways (grouped-query attention keeps each
//    query head with its KV head: local query head j uses local KV head
//    j / (nh/nkv), exactly the global mapping when nkv % ways == 0). S and D
//    must be whole.
//  - rope rotates within D at position s: S and D whole; linear.
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

namespace strata::spmd {

llvm::Error partitionNorm(Partitioner &p) {
  const Node &n = p.node();
  const TensorType &t = p.resultType();
  Linearity lin = n.op == OpKind::SoftmaxGrad ? Linearity::First
                                              : Linearity::None;
  auto plan = planElementwise(p, {lin, {t.rank() - 1}, {}}, t.shape);
  if (!plan) return plan.takeError();
  auto out = p.emitResults(n.op, plan->operands, n.attrs, {plan->result});
  if (!out) return out.takeError();
  inheritOrigin(p, plan->operands, out->front());
  return llvm::Error::success();
}

llvm::Error partitionNormGrad(Partitioner &p) {
  const Node &n = p.node();
  // (dy, x, w[, b]) -> (dx, dw[, db]); x leads.
  const TensorType &xt = p.resultType(0);
  llvm::SmallVector<unsigned, 4> order{1, 0};
  for (unsigned i = 2; i < n.operands.size(); ++i) order.push_back(i);
  auto plan = planElementwise(p, {Linearity::None, {xt.rank() - 1}, order},
                              xt.shape);
  if (!plan) return plan.takeError();
  Sharding weights = Sharding::replicated(1);
  for (const DimAxes &axes : plan->result.dims)
    weights.partial.append(axes.begin(), axes.end());
  llvm::SmallVector<Sharding, 3> shardings{plan->result};
  shardings.resize(n.results.size(), weights);
  auto out = p.emitResults(n.op, plan->operands, n.attrs, shardings);
  if (!out) return out.takeError();
  for (size_t i = 1; i < out->size(); ++i)
    if (!weights.partial.empty())
      p.setOrigin((*out)[i],
                  {opName(n.op).str() + " weight gradient over rows split over " +
                       axesStr(weights.partial),
                   n.scope});
  return llvm::Error::success();
}

llvm::Error partitionAttention(Partitioner &p) {
  const Node &n = p.node();
  unsigned qi = n.op == OpKind::AttentionGrad ? 1 : 0;
  ValueId q = p.operand(qi), k = p.operand(qi + 1);
  const Sharding &sq = p.sharding(q), &sk = p.sharding(k);
  int64_t nh = p.globalType(q).shape[2], nkv = p.globalType(k).shape[2];
  auto divides = [&](const DimAxes &axes) {
    int64_t ways = groupSize(p.mesh(), axes);
    return nh % ways == 0 && nkv % ways == 0;
  };
  DimAxes heads = !sq.dims[2].empty() && divides(sq.dims[2])   ? sq.dims[2]
                  : !sk.dims[2].empty() && divides(sk.dims[2]) ? sk.dims[2]
                                                               : DimAxes();
  auto clashes = [&](const DimAxes &axes) {
    return llvm::any_of(axes, [&](const std::string &a) {
      return llvm::is_contained(heads, a);
    });
  };
  DimAxes batch = !clashes(sq.dims[0]) ? sq.dims[0]
                  : !clashes(sk.dims[0]) ? sk.dims[0]
                                         : DimAxes();
  Sharding layout = makeSharding({batch, {}, heads, {}});
  llvm::SmallVector<ValueId, 4> operands;
  for (unsigned i = 0; i < n.operands.size(); ++i) {
    auto r = p.reshard(p.operand(i), layout,
                       opName(n.op) + " (split by batch and heads only)");
    if (!r) return r.takeError();
    operands.push_back(*r);
  }
  llvm::SmallVector<Sharding, 3> shardings(n.results.size(), layout);
  return p.emitResults(n.op, operands, n.attrs, shardings).takeError();
}

llvm::Error partitionRope(Partitioner &p) {
  const Node &n = p.node();
  auto plan =
      planElementwise(p, {Linearity::First, {1, 3}, {}}, p.resultType().shape);
  if (!plan) return plan.takeError();
  auto out = p.emitResults(n.op, plan->operands, n.attrs, {plan->result});
  if (!out) return out.takeError();
  inheritOrigin(p, plan->operands, out->front());
  return llvm::Error::success();
}

} // namespace strata::spmd
