//===- ShapeHandlers.cpp - Reshape, transpose, broadcast, slice, concat, reduce
//
// Data-movement ops keep splits where the moved dim keeps contiguous blocks:
//  - reshape: dims are matched in groups of equal products ([B,S,H] <->
//    [B,S,nh,D] matches H with {nh, D}); a split survives only on the
//    outermost dim of its group and moves to the outermost dim of the other
//    side, if that dim divides by the ways. So a head split on H becomes a
//    split of nh (and back), and merging [B,S] keeps B's dp split but needs
//    S whole.
//  - transpose permutes the dims' axes; broadcast may split new dims freely
//    (the hint decides); slice and concat need their dim whole.
//  - reductions over a split dim leave a partial sum (reduce_mean also scales
//    by 1/ways); reduce_max all-reduces with max at once.
// All of them are linear, so partial sums pass through (except reduce_max).
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

namespace strata::spmd {

namespace {
/// Dims of two shapes with equal products, matched in order. Size-1 dims
/// form groups of their own, except the input's leading ones (a batch of
/// one), which join the first group as its outermost dims. So merging [1,S]
/// into [S] needs S whole, as merging [B,S] does: a batch of one takes the
/// path of larger batches (Megatron's sequence-parallel pattern) instead of
/// carrying the sequence split into the flattened matmuls, where it would
/// gather each activation gradient twice (3-D and flattened) and make weight
/// gradients partial sums.
struct Group {
  llvm::SmallVector<int64_t, 2> in, out;
};

llvm::SmallVector<Group, 4> reshapeGroups(llvm::ArrayRef<int64_t> in,
                                          llvm::ArrayRef<int64_t> out) {
  llvm::SmallVector<Group, 4> groups;
  size_t i = 0, j = 0;
  // A leading run of size-1 input dims before a merge into a larger dim.
  bool batchOfOne = !in.empty() && in[0] == 1 && !out.empty() && out[0] != 1;
  while (i < in.size() || j < out.size()) {
    bool leading = batchOfOne && j == 0;
    if (i < in.size() && in[i] == 1 && !leading) {
      groups.push_back({{int64_t(i++)}, {}});
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      groups.push_back({{}, {int64_t(j++)}});
      continue;
    }
    Group g{{int64_t(i)}, {int64_t(j)}};
    int64_t pi = in[i++], pj = out[j++];
    while (pi != pj) {
      if (pi < pj) {
        g.in.push_back(int64_t(i));
        pi *= in[i++];
      } else {
        g.out.push_back(int64_t(j));
        pj *= out[j++];
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

Attrs withShape(Attrs attrs, llvm::ArrayRef<int64_t> shape) {
  attrs.set("shape", IntList(shape.begin(), shape.end()));
  return attrs;
}

/// Emits the current node as `op` on `x` with result sharding `s`; the
/// result inherits x's partial origin.
llvm::Error emitLinear(Partitioner &p, ValueId x, Attrs attrs,
                       const Sharding &s) {
  auto out = p.emitResults(p.node().op, {x}, std::move(attrs), {s});
  if (!out)
    return out.takeError();
  inheritOrigin(p, {x}, out->front());
  return llvm::Error::success();
}
} // namespace

llvm::Error partitionReshape(Partitioner &p) {
  ValueId x = p.operand(0);
  const Sharding &s = p.sharding(x);
  const Shape in = p.globalType(x).shape;
  const TensorType &rt = p.resultType();
  Sharding want = s, result = Sharding::replicated(rt.rank());
  result.partial = s.partial;
  for (const Group &g : reshapeGroups(in, rt.shape)) {
    for (size_t k = 1; k < g.in.size(); ++k)
      want.dims[g.in[k]].clear();
    if (g.in.empty())
      continue;
    DimAxes &lead = want.dims[g.in[0]];
    if (lead.empty())
      continue;
    if (g.out.empty() || rt.shape[g.out[0]] % groupSize(p.mesh(), lead)) {
      lead.clear();
      continue;
    }
    result.dims[g.out[0]] = lead;
  }
  auto r = p.reshard(x, want,
                     "reshape (a split must be the outermost dim of "
                     "its reshaped group)");
  if (!r)
    return r.takeError();
  return emitLinear(
      p, *r, withShape(p.node().attrs, localType(rt, result, p.mesh()).shape),
      result);
}

llvm::Error partitionTranspose(Partitioner &p) {
  ValueId x = p.operand(0);
  const Sharding &s = p.sharding(x);
  Sharding result = s;
  IntList perm = p.node().attrs.getInts("perm");
  for (size_t i = 0; i < perm.size(); ++i)
    result.dims[i] = s.dims[perm[i]];
  return emitLinear(p, x, p.node().attrs, result);
}

llvm::Error partitionBroadcast(Partitioner &p) {
  ValueId x = p.operand(0);
  const Sharding &s = p.sharding(x);
  const Shape in = p.globalType(x).shape;
  const TensorType &rt = p.resultType();
  // Broadcast (size-1) dims are never split, so the operand's axes carry over.
  size_t off = rt.rank() - in.size();
  Sharding result = Sharding::replicated(rt.rank());
  for (size_t j = 0; j < in.size(); ++j)
    result.dims[j + off] = s.dims[j];
  result.partial = s.partial;
  // New and size-1 dims are free to split: follow the consumers' hint.
  if (const Dims *h = p.hint()) {
    for (size_t d = 0; d < size_t(rt.rank()); ++d) {
      bool isNew = d < off || in[d - off] != rt.shape[d];
      const DimAxes &axes = (*h)[d];
      bool taken = llvm::any_of(axes, [&](const std::string &a) {
        return usesAxis(result.dims, a) ||
               llvm::is_contained(result.partial, a);
      });
      if (isNew && !taken && rt.shape[d] % groupSize(p.mesh(), axes) == 0)
        result.dims[d] = axes;
    }
  }
  return emitLinear(
      p, x, withShape(p.node().attrs, localType(rt, result, p.mesh()).shape),
      result);
}

llvm::Error partitionSlice(Partitioner &p) {
  ValueId x = p.operand(0);
  Sharding want = p.sharding(x);
  int64_t dim = p.node().attrs.getInt("dim");
  if (dim < 0)
    dim += int64_t(want.dims.size());
  want.dims[dim].clear();
  auto r = p.reshard(x, want, "slice (the sliced dim must be whole)");
  if (!r)
    return r.takeError();
  return emitLinear(p, *r, p.node().attrs, want);
}

llvm::Error partitionConcat(Partitioner &p) {
  const Node &n = p.node();
  int64_t rank = p.resultType().rank();
  int64_t dim = n.attrs.getInt("dim");
  if (dim < 0)
    dim += rank;
  auto plan =
      planElementwise(p, {Linearity::Sum, {dim}, {}}, p.resultType().shape);
  if (!plan)
    return plan.takeError();
  auto out = p.emitResults(n.op, plan->operands, n.attrs, {plan->result});
  if (!out)
    return out.takeError();
  inheritOrigin(p, plan->operands, out->front());
  return llvm::Error::success();
}

llvm::Error partitionReduce(Partitioner &p) {
  const Node &n = p.node();
  ValueId x = p.operand(0);
  if (n.op == OpKind::ReduceMax) {
    Sharding whole = p.sharding(x);
    whole.partial.clear();
    auto r = p.reshard(x, whole, "reduce_max (max of a partial sum)");
    if (!r)
      return r.takeError();
    x = *r;
  }
  const Sharding &s = p.sharding(x);
  int64_t rank = int64_t(s.dims.size());
  IntList axes = n.attrs.getInts("axes");
  auto reduced = [&](int64_t d) {
    return axes.empty() || llvm::is_contained(axes, d) ||
           llvm::is_contained(axes, d - rank);
  };
  bool keep = n.attrs.getBool("keepdim");
  Sharding result;
  DimAxes split;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced(d))
      result.dims.push_back(s.dims[d]);
    else if (keep)
      result.dims.emplace_back();
    if (reduced(d))
      split.append(s.dims[d].begin(), s.dims[d].end());
  }
  result.partial = s.partial;
  if (split.empty())
    return emitLinear(p, x, n.attrs, result);

  std::string over = axesStr(split);
  std::string name = p.src().value(n.results[0]).name;
  if (n.op == OpKind::ReduceMax) {
    auto local = p.emit(n.op, {x}, n.attrs, {result});
    if (!local)
      return local.takeError();
    Attrs ar{{"axes", StrList(split.begin(), split.end())},
             {"reduce", std::string("max")},
             {"reason", "reduce_max over dims split over " + over},
             {"src", n.scope}};
    return p
        .emitResults(OpKind::AllReduce, {local->front()}, std::move(ar),
                     {result})
        .takeError();
  }
  result.partial.append(split.begin(), split.end());
  PartialOrigin origin{opName(n.op).str() + " over dims split over " + over,
                       n.scope};
  if (n.op == OpKind::ReduceSum) {
    auto out = p.emitResults(n.op, {x}, n.attrs, {result});
    if (!out)
      return out.takeError();
    p.setOrigin(out->front(), origin);
    return llvm::Error::success();
  }
  // The mean of a shard is ways times the shard's share of the global mean.
  auto local = p.emit(n.op, {x}, n.attrs, {result});
  if (!local)
    return local.takeError();
  auto out = p.emitResults(
      OpKind::Scale, {local->front()},
      {{"value", 1.0 / double(groupSize(p.mesh(), split))}}, {result});
  if (!out)
    return out.takeError();
  p.setOrigin(out->front(), origin);
  return llvm::Error::success();
}

} // namespace strata::spmd
