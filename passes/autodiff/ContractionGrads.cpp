//===- ContractionGrads.cpp - Gradients of reductions and matmul
//-----------===//
//
// A reduction's adjoint broadcasts dy back over the reduced dims. A matmul's
// adjoints are matmuls with the transposes folded into the attributes; a
// rank-2 rhs shared by all batch entries gets its gradient summed over the
// batch, as one 2D matmul when the lhs can be flattened.
//
//===----------------------------------------------------------------------===//
#include "passes/autodiff/GradRules.h"

namespace strata::autodiff {

namespace {
/// x's shape with the reduced dims of the forward node set to 1.
Shape keptShape(const GradCtx &c) {
  Shape shape = c.type(c.x(0)).shape;
  IntList axes = c.attrs().getInts("axes");
  int64_t rank = int64_t(shape.size());
  for (int64_t i = 0; i < rank; ++i)
    if (axes.empty() || llvm::is_contained(axes, i) ||
        llvm::is_contained(axes, i - rank))
      shape[i] = 1;
  return shape;
}

llvm::ArrayRef<int64_t> dropLeadingOnes(llvm::ArrayRef<int64_t> s) {
  while (!s.empty() && s.front() == 1)
    s = s.drop_front();
  return s;
}

/// `v` (a reduction result or its adjoint) in a shape that broadcasts back
/// over x: as it is if only leading dims were reduced (numpy broadcasting
/// aligns trailing dims), else reshaped to the kept-dims shape.
ValueId keepDims(GradCtx &c, ValueId v, llvm::ArrayRef<int64_t> kept) {
  if (llvm::equal(dropLeadingOnes(c.type(v).shape), dropLeadingOnes(kept)))
    return v;
  return c.b.reshape(v, kept);
}

ValueId broadcastTo(GradCtx &c, ValueId v, llvm::ArrayRef<int64_t> shape) {
  if (llvm::equal(c.type(v).shape, shape))
    return v;
  return c.b.create1(OpKind::Broadcast, {v},
                     {{"shape", IntList(shape.begin(), shape.end())}});
}

/// Swaps the last two dims.
ValueId transposeLast2(GradCtx &c, ValueId v) {
  int64_t r = c.type(v).rank();
  IntList perm;
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  return c.b.create1(OpKind::Transpose, {v}, {{"perm", perm}});
}
} // namespace

// y = sum over axes: dx = dy broadcast back.
llvm::Expected<Grads> gradReduceSum(GradCtx &c) {
  Shape kept = keptShape(c);
  return Grads{broadcastTo(c, keepDims(c, c.dy(), kept), c.type(c.x(0)).shape)};
}

// y = mean over axes: dx = dy / count broadcast back.
llvm::Expected<Grads> gradReduceMean(GradCtx &c) {
  Shape kept = keptShape(c);
  double count = double(c.type(c.x(0)).numElements()) /
                 double(c.type(c.y()).numElements());
  ValueId scaled = c.b.scale(keepDims(c, c.dy(), kept), 1.0 / count);
  return Grads{broadcastTo(c, scaled, c.type(c.x(0)).shape)};
}

// y = max over axes: dy goes to every element equal to the max. With
// dyb = dy broadcast, relu_grad(dyb, y - x) is dyb where x < max and 0 where
// x == max (relu'(0) = 0), so dx = dyb - relu_grad(dyb, y - x). Ties all get
// dy (unlike torch.amax, which splits it); ties have measure zero in training.
llvm::Expected<Grads> gradReduceMax(GradCtx &c) {
  Shape kept = keptShape(c);
  Shape xs = c.type(c.x(0)).shape;
  ValueId dyb = broadcastTo(c, keepDims(c, c.dy(), kept), xs);
  ValueId below = c.b.sub(keepDims(c, c.y(), kept), c.x(0));
  return Grads{c.b.sub(dyb, c.b.create1(OpKind::ReluGrad, {dyb, below}))};
}

// y = op(a) @ op(b) [+ acc], op = optional transpose. With A = op(a),
// B = op(b): dA = dy B^T, dB = A^T dy, dacc = dy, and da / db undo the
// transposes:
//   da = ta ? B dy^T : dy B^T          db = tb ? dy^T A : A^T dy
llvm::Expected<Grads> gradMatMul(GradCtx &c) {
  ValueId a = c.x(0), b = c.x(1), dy = c.dy();
  bool ta = c.attrs().getBool("transpose_a");
  bool tb = c.attrs().getBool("transpose_b");
  TensorType at = c.type(a), bt = c.type(b);
  // b is rank 2 and shared by every batch entry of a.
  bool sharedRhs = bt.rank() == 2 && at.rank() > 2;
  Grads g(c.node.operands.size(), kNoValue);
  if (g.size() == 3 && c.wants(2))
    g[2] = dy;
  if (c.wants(0)) {
    if (!ta)
      g[0] = c.b.matmul(dy, b, false, !tb);
    else if (!sharedRhs)
      g[0] = c.b.matmul(b, dy, tb, true);
    else // the rank-2 b cannot be the lhs of a batched matmul
      g[0] = transposeLast2(c, c.b.matmul(dy, b, false, !tb));
  }
  if (c.wants(1)) {
    if (!sharedRhs) {
      g[1] = tb ? c.b.matmul(dy, a, true, ta) : c.b.matmul(a, dy, !ta, false);
    } else if (!ta) {
      // Fold the batch into the rows: a [..., M, K] -> [R, K], dy -> [R, N].
      int64_t k = at.shape.back(), n = c.type(dy).shape.back();
      int64_t rows = at.numElements() / k;
      ValueId a2 = c.b.reshape(a, {rows, k});
      ValueId dy2 = c.b.reshape(dy, {rows, n});
      g[1] = tb ? c.b.matmul(dy2, a2, true, false)
                : c.b.matmul(a2, dy2, true, false);
    } else {
      // a [..., K, M] cannot be flattened into rows: batched, then summed.
      ValueId full =
          tb ? c.b.matmul(dy, a, true, true) : c.b.matmul(a, dy, false, false);
      IntList batch;
      for (int64_t i = 0; i + 2 < at.rank(); ++i)
        batch.push_back(i);
      g[1] = c.b.reduceSum(full, batch);
    }
  }
  return g;
}

} // namespace strata::autodiff
