//===- ShapeGrads.cpp - Gradients of shape ops and of gather/scatter
//-------===//
//
// Shape ops move elements, so their adjoints move them back: reshape back,
// inverse permutation, sum over broadcast dims, zero-pad a slice (concat with
// fills), slice a concat. gather and scatter_add are each other's adjoints.
//
//===----------------------------------------------------------------------===//
#include "passes/autodiff/GradRules.h"

namespace strata::autodiff {

namespace {
int64_t normDim(const GradCtx &c, int64_t dim) {
  return dim < 0 ? dim + c.type(c.x(0)).rank() : dim;
}
} // namespace

llvm::Expected<Grads> gradReshape(GradCtx &c) {
  return Grads{c.b.reshape(c.dy(), c.type(c.x(0)).shape)};
}

llvm::Expected<Grads> gradTranspose(GradCtx &c) {
  IntList perm = c.attrs().getInts("perm"), inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = int64_t(i);
  return Grads{c.b.create1(OpKind::Transpose, {c.dy()}, {{"perm", inverse}})};
}

llvm::Expected<Grads> gradBroadcast(GradCtx &c) {
  return Grads{unbroadcast(c.b, c.dy(), c.type(c.x(0)).shape)};
}

// dx = dy placed at [start, start+size) of dim, zeros elsewhere.
llvm::Expected<Grads> gradSlice(GradCtx &c) {
  TensorType xt = c.type(c.x(0));
  int64_t dim = normDim(c, c.attrs().getInt("dim"));
  int64_t start = c.attrs().getInt("start"), size = c.attrs().getInt("size");
  int64_t after = xt.shape[dim] - start - size;
  llvm::SmallVector<ValueId, 3> parts;
  auto zeros = [&](int64_t len) {
    TensorType t{c.type(c.dy()).dtype, xt.shape};
    t.shape[dim] = len;
    return c.b.fill(0.0, t);
  };
  if (start > 0)
    parts.push_back(zeros(start));
  parts.push_back(c.dy());
  if (after > 0)
    parts.push_back(zeros(after));
  if (parts.size() == 1)
    return Grads{c.dy()};
  return Grads{c.b.create1(OpKind::Concat, parts, {{"dim", dim}})};
}

// dx_i = the slice of dy that operand i filled.
llvm::Expected<Grads> gradConcat(GradCtx &c) {
  int64_t dim = normDim(c, c.attrs().getInt("dim"));
  Grads g(c.node.operands.size(), kNoValue);
  int64_t offset = 0;
  for (unsigned i = 0; i < g.size(); ++i) {
    int64_t size = c.type(c.x(i)).shape[dim];
    if (c.wants(i))
      g[i] = c.b.create1(OpKind::Slice, {c.dy()},
                         {{"dim", dim}, {"start", offset}, {"size", size}});
    offset += size;
  }
  return g;
}

// y = table[ids]: dtable = scatter_add(dy, ids) over the table's rows.
llvm::Expected<Grads> gradGather(GradCtx &c) {
  return Grads{c.b.create1(OpKind::ScatterAdd, {c.dy(), c.x(1)},
                           {{"rows", c.type(c.x(0)).shape[0]}}),
               kNoValue};
}

// y = scatter_add(x, ids): dx = dy[ids].
llvm::Expected<Grads> gradScatterAdd(GradCtx &c) {
  return Grads{c.b.create1(OpKind::Gather, {c.dy(), c.x(1)}), kNoValue};
}

} // namespace strata::autodiff
