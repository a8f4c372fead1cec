//===- DotHandler.cpp - Partitioning matmul
//--------------------------------===//
//
// matmul(a[..., M, K], b[..., K, N]) (transposes folded in). The dims of the
// result are a's batch dims, M and N; K is contracted. Each mesh axis may
// split one of {batch..., M, N, K}:
//  - the operand that leads keeps its layout: a parameter over an activation
//    (Megatron: weights never move), else the larger operand; the other
//    operand's conflicting splits are gathered;
//  - K split over axes A on both sides makes the result a partial sum over A
//    (row-parallel linear: [.., tp] x [tp, _] -> partial=[tp]); K split on
//    one side only slices the other side locally;
//  - a partial operand passes its partial axes through (matmul is linear in
//    each operand); if both are partial, the smaller one is reduced.
// Column-parallel: [dp,_,_] x [_,tp] -> [dp,_,tp] with no communication; with
// sequence parallelism the input [dp,tp,_] conflicts with the weight's tp
// and is all-gathered along the sequence.
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

namespace strata::spmd {

namespace {
/// Where an operand's dims sit among the matmul's roles.
struct Roles {
  int64_t rank;
  int64_t rows;  // M for a, N for b
  int64_t inner; // K
  int64_t batch; // number of leading batch dims
};

Roles rolesOf(int64_t rank, bool transposed, bool isLhs, bool hasBatch) {
  int64_t last = rank - 1, second = rank - 2;
  bool rowsLast = isLhs == transposed;
  return {rank, rowsLast ? last : second, rowsLast ? second : last,
          hasBatch ? rank - 2 : 0};
}
} // namespace

llvm::Error partitionMatMul(Partitioner &p) {
  const Node &n = p.node();
  if (n.operands.size() == 3)
    return p.fail("a matmul with an accumulator is made by "
                  "grad-accumulation-fusion after partitioning (run spmd "
                  "first)");
  ValueId a = p.operand(0), b = p.operand(1);
  TensorType at = p.globalType(a), bt = p.globalType(b);
  Roles ra = rolesOf(at.rank(), n.attrs.getBool("transpose_a"), true, true);
  Roles rb =
      rolesOf(bt.rank(), n.attrs.getBool("transpose_b"), false, bt.rank() > 2);
  const Sharding &sa = p.sharding(a), &sb = p.sharding(b);

  // Slots: batch dims, then M, N, K.
  int64_t nb = ra.batch;
  Dims slots(nb + 3);
  const int64_t M = nb, N = nb + 1, K = nb + 2;
  auto claim = [&](const Sharding &s, const Roles &r, int64_t rowsSlot) {
    auto take = [&](int64_t slot, int64_t dim) {
      const DimAxes &axes = s.dims[dim];
      if (axes.empty() || !slots[slot].empty())
        return;
      for (const std::string &ax : axes)
        if (usesAxis(slots, ax))
          return;
      slots[slot] = axes;
    };
    for (int64_t i = 0; i < r.batch; ++i)
      take(i, i);
    take(rowsSlot, r.rows);
    take(K, r.inner);
  };
  bool aParam = p.isParam(a), bParam = p.isParam(b);
  bool bLeads = bParam != aParam ? bParam : bt.numElements() > at.numElements();
  if (bLeads) {
    claim(sb, rb, N);
    claim(sa, ra, M);
  } else {
    claim(sa, ra, M);
    claim(sb, rb, N);
  }

  // Partial operands: keep the larger one's partial axes (minus any the
  // slots split, which its reshard reduce-scatters).
  bool aKeeps = !sa.partial.empty() &&
                (sb.partial.empty() || at.numElements() >= bt.numElements());
  bool bKeeps = !aKeeps && !sb.partial.empty();
  DimAxes pass = aKeeps ? sa.partial : bKeeps ? sb.partial : DimAxes();
  llvm::erase_if(pass,
                 [&](const std::string &ax) { return usesAxis(slots, ax); });

  auto target = [&](const Roles &r, int64_t rowsSlot, bool keeps) {
    Sharding s = Sharding::replicated(r.rank);
    for (int64_t i = 0; i < r.batch; ++i)
      s.dims[i] = slots[i];
    s.dims[r.rows] = slots[rowsSlot];
    s.dims[r.inner] = slots[K];
    if (keeps)
      s.partial = pass;
    return s;
  };
  auto ax = p.reshard(a, target(ra, M, aKeeps), "matmul (lhs)");
  if (!ax)
    return ax.takeError();
  auto bx = p.reshard(b, target(rb, N, bKeeps), "matmul (rhs)");
  if (!bx)
    return bx.takeError();

  Sharding result = Sharding::replicated(at.rank());
  for (int64_t i = 0; i < nb; ++i)
    result.dims[i] = slots[i];
  result.dims[nb] = slots[M];
  result.dims[nb + 1] = slots[N];
  result.partial = pass;
  result.partial.append(slots[K].begin(), slots[K].end());
  auto out = p.emitResults(OpKind::MatMul, {*ax, *bx}, n.attrs, {result});
  if (!out)
    return out.takeError();
  if (!slots[K].empty())
    p.setOrigin(out->front(),
                {"matmul contraction over " + axesStr(slots[K]), n.scope});
  else
    inheritOrigin(p, {*ax, *bx}, out->front());
  return llvm::Error::success();
}

} // namespace strata::spmd
