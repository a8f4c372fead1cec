//===- Elementwise.cpp - Elementwise ops, creation ops, the shared merge
//---===//
//
// An elementwise op runs on any layout as long as its operands agree, so the
// rule only picks one: the operands' splits merged in priority order (a split
// beats a whole dim, since slicing is free and gathering is not; an axis
// splits one dim only), then split further as later consumers want (the hint;
// a reduction of a partial sum becomes a reduce_scatter). Partial sums pass
// through where the op is linear in them (add of partials, mul by a whole
// factor, dropout, grad ops' dy) and are reduced otherwise.
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

namespace strata::spmd {

Sharding alignedSharding(const Dims &dims, llvm::ArrayRef<int64_t> shape,
                         const TensorType &t) {
  size_t off = shape.size() - t.shape.size();
  Sharding s = Sharding::replicated(t.rank());
  for (size_t j = 0; j < t.shape.size(); ++j)
    if (t.shape[j] == shape[j + off])
      s.dims[j] = dims[j + off];
  return s;
}

void inheritOrigin(Partitioner &p, llvm::ArrayRef<ValueId> operands,
                   ValueId v) {
  if (p.sharding(v).partial.empty())
    return;
  for (ValueId x : operands)
    if (const PartialOrigin *o = p.origin(x)) {
      p.setOrigin(v, *o);
      return;
    }
}

llvm::Expected<ElementwisePlan> planElementwise(Partitioner &p,
                                                const ElementwiseSpec &spec,
                                                llvm::ArrayRef<int64_t> shape) {
  const Node &n = p.node();
  unsigned count = n.operands.size();
  llvm::SmallVector<unsigned, 4> order(spec.order);
  if (order.empty())
    for (unsigned i = 0; i < count; ++i)
      order.push_back(i);
  auto whole = [&](size_t d) {
    return llvm::is_contained(spec.wholeDims, int64_t(d));
  };
  auto used = [](const Dims &dims, const DimAxes &axes) {
    return llvm::any_of(
        axes, [&](const std::string &a) { return usesAxis(dims, a); });
  };

  // Operands whose partial sums were already reduced for another consumer
  // are used whole: that reduction is paid for.
  llvm::SmallVector<ValueId, 4> xs;
  for (unsigned i = 0; i < count; ++i)
    xs.push_back(p.reducedIfAvailable(p.operand(i)));

  // Merge the operands' splits.
  Dims dims(shape.size());
  for (unsigned i : order) {
    ValueId x = xs[i];
    TensorType t = p.globalType(x);
    const Sharding &s = p.sharding(x);
    size_t off = shape.size() - t.shape.size();
    for (size_t j = 0; j < t.shape.size(); ++j) {
      size_t d = j + off;
      if (t.shape[j] != shape[d] || s.dims[j].empty() || whole(d) ||
          !dims[d].empty() || used(dims, s.dims[j]))
        continue;
      dims[d] = s.dims[j];
    }
  }

  // Which partial axes pass, and on which operands.
  DimAxes pass;
  llvm::SmallVector<bool, 4> carries(count, false);
  auto partial = [&](unsigned i) -> DimAxes {
    return p.sharding(xs[i]).partial;
  };
  switch (spec.linearity) {
  case Linearity::None:
    break;
  case Linearity::Sum:
    pass = partial(0);
    for (unsigned i = 1; i < count; ++i)
      llvm::erase_if(pass, [&](const std::string &a) {
        return !llvm::is_contained(partial(i), a);
      });
    carries.assign(count, true);
    break;
  case Linearity::OneFactor:
    for (unsigned i = 0; i < count; ++i)
      if (!partial(i).empty()) {
        pass = partial(i);
        carries[i] = true;
        break;
      }
    break;
  case Linearity::First:
    pass = partial(0);
    carries[0] = true;
    break;
  }

  // Split further where the consumers want it (the hint): whole operands are
  // sliced for free, and partial sums over those axes are reduce-scattered
  // rather than all-reduced.
  if (const Dims *h = p.hint()) {
    for (size_t d = 0; d < shape.size(); ++d) {
      const DimAxes &axes = (*h)[d];
      if (axes.empty() || !dims[d].empty() || whole(d) || used(dims, axes) ||
          shape[d] % groupSize(p.mesh(), axes))
        continue;
      dims[d] = axes;
    }
  }
  llvm::erase_if(pass, [&](const std::string &a) { return usesAxis(dims, a); });

  ElementwisePlan plan;
  plan.result.dims = dims;
  plan.result.partial = pass;
  for (unsigned i = 0; i < count; ++i) {
    ValueId x = xs[i];
    Sharding target = alignedSharding(dims, shape, p.globalType(x));
    if (carries[i])
      target.partial = pass;
    auto r = p.reshard(x, target,
                       opName(n.op) + " (operand " + llvm::Twine(i) + ")");
    if (!r)
      return r.takeError();
    plan.operands.push_back(*r);
  }
  return plan;
}

llvm::Error partitionElementwise(Partitioner &p, Linearity linearity) {
  const Node &n = p.node();
  auto plan = planElementwise(p, {linearity, {}, {}}, p.resultType().shape);
  if (!plan)
    return plan.takeError();
  llvm::SmallVector<Sharding, 3> shardings(n.results.size(), plan->result);
  auto out = p.emitResults(n.op, plan->operands, n.attrs, shardings);
  if (!out)
    return out.takeError();
  for (ValueId v : *out)
    inheritOrigin(p, plan->operands, v);
  return llvm::Error::success();
}

llvm::Error partitionCreation(Partitioner &p) {
  const Node &n = p.node();
  const TensorType &t = p.resultType();
  Sharding s = Sharding::replicated(t.rank());
  if (const Dims *h = p.hint()) {
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const DimAxes &axes = (*h)[d];
      bool taken = llvm::any_of(
          axes, [&](const std::string &a) { return usesAxis(s.dims, a); });
      bool iotaDim =
          n.op == OpKind::Iota &&
          (n.attrs.getInt("dim") + t.rank()) % t.rank() == int64_t(d);
      if (!taken && !iotaDim && t.shape[d] % groupSize(p.mesh(), axes) == 0)
        s.dims[d] = axes;
    }
  }
  Attrs attrs = n.attrs;
  const Shape &local = localType(t, s, p.mesh()).shape;
  attrs.set("shape", IntList(local.begin(), local.end()));
  return p.emitResults(n.op, {}, std::move(attrs), {s}).takeError();
}

} // namespace strata::spmd
