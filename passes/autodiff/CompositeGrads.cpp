//===- CompositeGrads.cpp - Gradients of the fused composite ops
//-----------===//
//
// Each composite op has a fused grad op in ir/Ops.def that takes the forward
// node's attributes unchanged (eps, causal/scale, p/stream, ...). A fused
// grad op yields every operand's adjoint; the pass uses those it needs.
//
//===----------------------------------------------------------------------===//
#include "passes/autodiff/GradRules.h"

namespace strata::autodiff {

namespace {
/// Appends `op(operands)` with the forward node's attributes.
llvm::SmallVector<ValueId, 1> fused(GradCtx &c, OpKind op,
                                    llvm::ArrayRef<ValueId> operands) {
  return c.b.create(op, operands, c.attrs());
}
} // namespace

// (dx, dw, db) = layer_norm_grad(dy, x, w, b).
llvm::Expected<Grads> gradLayerNorm(GradCtx &c) {
  auto r = fused(c, OpKind::LayerNormGrad, {c.dy(), c.x(0), c.x(1), c.x(2)});
  return Grads{r[0], r[1], r[2]};
}

// (dx, dw) = rms_norm_grad(dy, x, w).
llvm::Expected<Grads> gradRmsNorm(GradCtx &c) {
  auto r = fused(c, OpKind::RmsNormGrad, {c.dy(), c.x(0), c.x(1)});
  return Grads{r[0], r[1]};
}

// softmax_grad takes the forward output: dx = y (dy - sum(dy y)).
llvm::Expected<Grads> gradSoftmax(GradCtx &c) {
  return Grads{fused(c, OpKind::SoftmaxGrad, {c.dy(), c.y()})[0]};
}

// (dq, dk, dv) = attention_grad(dout, q, k, v); GQA head sums happen inside.
llvm::Expected<Grads> gradAttention(GradCtx &c) {
  auto r = fused(c, OpKind::AttentionGrad, {c.dy(), c.x(0), c.x(1), c.x(2)});
  return Grads{r[0], r[1], r[2]};
}

// RoPE is a rotation per position, so its adjoint is the inverse rotation.
llvm::Expected<Grads> gradRope(GradCtx &c) {
  Attrs a = c.attrs();
  if (a.getBool("inverse"))
    a.erase("inverse");
  else
    a.set("inverse", true);
  return Grads{c.b.create1(OpKind::Rope, {c.dy()}, std::move(a))};
}

// The same counter-based mask (same p and stream), applied to dy.
llvm::Expected<Grads> gradDropout(GradCtx &c) {
  return Grads{fused(c, OpKind::DropoutGrad, {c.dy()})[0]};
}

// dlogits = cross_entropy_grad(dloss, logits, labels); labels get none.
llvm::Expected<Grads> gradCrossEntropy(GradCtx &c) {
  return Grads{fused(c, OpKind::CrossEntropyGrad, {c.dy(), c.x(0), c.x(1)})[0],
               kNoValue};
}

} // namespace strata::autodiff
