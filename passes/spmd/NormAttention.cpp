//===- NormAttention.cpp - Norms, softmax, attention and rope
//--------------===//
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
//    When the ways are a multiple of the KV heads (ways = nkv * r), the KV
//    heads are replicated, as in Megatron-LM: k and v come whole, and rank
//    w of the head group (whose query heads all use KV head w / r) selects
//    that head with a rank-dependent one-hot `sel` [1,1,nkv,1]
//    (iota -> shard_slice -> one_hot): k_w = reduce_sum(k * sel, heads).
//    The gradient puts dk_w back in its slot, dk = dk_w * sel, a partial
//    sum over the head axes: summed over the ranks it is the serial
//    gradient (each KV head's copies added), reduced where a consumer needs
//    it (the K/V weight gradients, dx), like any row-parallel partial sum.
//  - rope rotates within D at position s: S and D whole; linear.
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

namespace strata::spmd {

llvm::Error partitionNorm(Partitioner &p) {
  const Node &n = p.node();
  const TensorType &t = p.resultType();
  Linearity lin =
      n.op == OpKind::SoftmaxGrad ? Linearity::First : Linearity::None;
  auto plan = planElementwise(p, {lin, {t.rank() - 1}, {}}, t.shape);
  if (!plan)
    return plan.takeError();
  auto out = p.emitResults(n.op, plan->operands, n.attrs, {plan->result});
  if (!out)
    return out.takeError();
  inheritOrigin(p, plan->operands, out->front());
  return llvm::Error::success();
}

llvm::Error partitionNormGrad(Partitioner &p) {
  const Node &n = p.node();
  // (dy, x, w[, b]) -> (dx, dw[, db]); x leads.
  const TensorType &xt = p.resultType(0);
  llvm::SmallVector<unsigned, 4> order{1, 0};
  for (unsigned i = 2; i < n.operands.size(); ++i)
    order.push_back(i);
  auto plan =
      planElementwise(p, {Linearity::None, {xt.rank() - 1}, order}, xt.shape);
  if (!plan)
    return plan.takeError();
  Sharding weights = Sharding::replicated(1);
  for (const DimAxes &axes : plan->result.dims)
    weights.partial.append(axes.begin(), axes.end());
  llvm::SmallVector<Sharding, 3> shardings{plan->result};
  shardings.resize(n.results.size(), weights);
  auto out = p.emitResults(n.op, plan->operands, n.attrs, shardings);
  if (!out)
    return out.takeError();
  for (size_t i = 1; i < out->size(); ++i)
    if (!weights.partial.empty())
      p.setOrigin((*out)[i], {opName(n.op).str() +
                                  " weight gradient over rows split over " +
                                  axesStr(weights.partial),
                              n.scope});
  return llvm::Error::success();
}

namespace {

/// The one-hot selector of rank w's KV head w / (ways / nkv) over the group
/// `heads`: local [1,1,nkv,1] of dtype `dt`, a shard of the logical
/// [ways,1,nkv,1] whose row w selects that head.
llvm::Expected<ValueId> kvSelector(Partitioner &p, const DimAxes &heads,
                                   int64_t nkv, DType dt) {
  int64_t ways = groupSize(p.mesh(), heads);
  // [nkv, r] rows of KV head indices, flattened: entry w is w / r.
  auto idx = p.emit1(OpKind::Iota, {},
                     {{"shape", IntList{nkv, ways / nkv}},
                      {"dim", int64_t(0)},
                      {"dtype", std::string("i32")}},
                     Sharding::replicated(2));
  if (!idx)
    return idx.takeError();
  auto flat = p.emit1(OpKind::Reshape, {*idx}, {{"shape", IntList{ways}}},
                      Sharding::replicated(1));
  if (!flat)
    return flat.takeError();
  auto mine = p.emit1(
      OpKind::ShardSlice, {*flat},
      {{"dim", int64_t(0)}, {"axes", StrList(heads.begin(), heads.end())}},
      makeSharding({heads}));
  if (!mine)
    return mine.takeError();
  auto hot = p.emit1(OpKind::OneHot, {*mine},
                     {{"classes", nkv}, {"dtype", dtypeName(dt).str()}},
                     makeSharding({heads, {}}));
  if (!hot)
    return hot.takeError();
  return p.emit1(OpKind::Reshape, {*hot}, {{"shape", IntList{1, 1, nkv, 1}}},
                 makeSharding({heads, {}, {}, {}}));
}

/// This rank's KV head of whole-head x[B,S,nkv,D]: [B,S,1,D], a shard of the
/// replicated heads [B,S,ways,D].
llvm::Expected<ValueId> selectKvHead(Partitioner &p, ValueId x, ValueId sel,
                                     const DimAxes &batch,
                                     const DimAxes &heads) {
  auto masked =
      p.emit1(OpKind::Mul, {x, sel}, {}, makeSharding({batch, {}, {}, {}}));
  if (!masked)
    return masked.takeError();
  return p.emit1(OpKind::ReduceSum, {*masked},
                 {{"axes", IntList{2}}, {"keepdim", true}},
                 makeSharding({batch, {}, heads, {}}));
}

/// attention / attention_grad with KV heads replicated over `heads`
/// (ways a multiple of nkv): see the file comment.
llvm::Error partitionReplicatedKv(Partitioner &p, llvm::ArrayRef<ValueId> ops,
                                  int64_t nkv, const DimAxes &batch,
                                  const DimAxes &heads) {
  const Node &n = p.node();
  unsigned qi = n.op == OpKind::AttentionGrad ? 1 : 0;
  // One KV head (multi-query) is every rank's head: no selection.
  ValueId sel = -1;
  if (nkv > 1) {
    auto s = kvSelector(p, heads, nkv, p.type(ops[qi]).dtype);
    if (!s)
      return s.takeError();
    sel = *s;
  }
  llvm::SmallVector<ValueId, 4> operands(ops.begin(), ops.end());
  for (unsigned i = qi + 1; i < qi + 3 && nkv > 1; ++i) {
    auto x = selectKvHead(p, ops[i], sel, batch, heads);
    if (!x)
      return x.takeError();
    operands[i] = *x;
  }
  Sharding split = makeSharding({batch, {}, heads, {}});
  if (n.op == OpKind::Attention)
    return p.emitResults(n.op, operands, n.attrs, {split}).takeError();
  // dk, dv: partial sums over the head group of each rank's KV head in its
  // slot (with one KV head, attention_grad's own results).
  Sharding partial = makeSharding({batch, {}, {}, {}});
  partial.partial.assign(heads.begin(), heads.end());
  PartialOrigin origin{"KV heads replicated over " + axesStr(heads) +
                           " (each rank's copy of its KV head)",
                       n.scope};
  if (nkv == 1) {
    auto r = p.emitResults(n.op, operands, n.attrs, {split, partial, partial});
    if (!r)
      return r.takeError();
    p.setOrigin((*r)[1], origin);
    p.setOrigin((*r)[2], origin);
    return llvm::Error::success();
  }
  llvm::SmallVector<std::string, 3> names; // dq; this rank's dk, dv
  for (unsigned i = 0; i < 3; ++i) {
    std::string name = p.src().value(n.results[i]).name;
    names.push_back(i ? p.freshName(name + ".head") : name);
  }
  auto r = p.emit(n.op, operands, n.attrs, {split, split, split}, names);
  if (!r)
    return r.takeError();
  if (auto e = p.bind(0, (*r)[0]))
    return e;
  for (unsigned i = 1; i < 3; ++i) {
    auto d = p.emit1(OpKind::Mul, {(*r)[i], sel}, {}, partial,
                     p.src().value(n.results[i]).name);
    if (!d)
      return d.takeError();
    p.setOrigin(*d, origin);
    if (auto e = p.bind(i, *d))
      return e;
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error partitionAttention(Partitioner &p) {
  const Node &n = p.node();
  unsigned qi = n.op == OpKind::AttentionGrad ? 1 : 0;
  ValueId q = p.operand(qi), k = p.operand(qi + 1);
  const Sharding &sq = p.sharding(q), &sk = p.sharding(k);
  int64_t nh = p.globalType(q).shape[2], nkv = p.globalType(k).shape[2];
  // KV heads split like the query heads, or replicated (ways % nkv == 0).
  auto divides = [&](const DimAxes &axes) {
    int64_t ways = groupSize(p.mesh(), axes);
    return nh % ways == 0 && (nkv % ways == 0 || ways % nkv == 0);
  };
  DimAxes heads = !sq.dims[2].empty() && divides(sq.dims[2])   ? sq.dims[2]
                  : !sk.dims[2].empty() && divides(sk.dims[2]) ? sk.dims[2]
                                                               : DimAxes();
  auto clashes = [&](const DimAxes &axes) {
    return llvm::any_of(axes, [&](const std::string &a) {
      return llvm::is_contained(heads, a);
    });
  };
  DimAxes batch = !clashes(sq.dims[0])   ? sq.dims[0]
                  : !clashes(sk.dims[0]) ? sk.dims[0]
                                         : DimAxes();
  Sharding layout = makeSharding({batch, {}, heads, {}});
  bool replicate = !heads.empty() && nkv % groupSize(p.mesh(), heads) != 0;
  llvm::SmallVector<ValueId, 4> operands;
  for (unsigned i = 0; i < n.operands.size(); ++i) {
    bool kv = i == qi + 1 || i == qi + 2;
    auto r = p.reshard(
        p.operand(i),
        replicate && kv ? makeSharding({batch, {}, {}, {}}) : layout,
        opName(n.op) + (replicate && kv ? " (KV heads replicated over " +
                                              axesStr(heads) + ")"
                                        : " (split by batch and heads only)"));
    if (!r)
      return r.takeError();
    operands.push_back(*r);
  }
  if (replicate)
    return partitionReplicatedKv(p, operands, nkv, batch, heads);
  llvm::SmallVector<Sharding, 3> shardings(n.results.size(), layout);
  return p.emitResults(n.op, operands, n.attrs, shardings).takeError();
}

llvm::Error partitionRope(Partitioner &p) {
  const Node &n = p.node();
  auto plan =
      planElementwise(p, {Linearity::First, {1, 3}, {}}, p.resultType().shape);
  if (!plan)
    return plan.takeError();
  auto out = p.emitResults(n.op, plan->operands, n.attrs, {plan->result});
  if (!out)
    return out.takeError();
  inheritOrigin(p, plan->operands, out->front());
  return llvm::Error::success();
}

} // namespace strata::spmd
