//===- ElementwiseGrads.cpp - Gradients of elementwise ops
//-----------------===//
//
// Unary ops reuse the forward result where that is cheaper (exp, sqrt, tanh,
// sigmoid); activations with a fused grad op use it. Binary ops broadcast, so
// each operand's adjoint is summed back to the operand's shape.
//
//===----------------------------------------------------------------------===//
#include "passes/autodiff/GradRules.h"

namespace strata::autodiff {

namespace {
ValueId op1(GradCtx &c, OpKind op, llvm::ArrayRef<ValueId> xs, Attrs a = {}) {
  return c.b.create1(op, xs, std::move(a));
}
ValueId neg(GradCtx &c, ValueId v) { return op1(c, OpKind::Neg, {v}); }
ValueId div(GradCtx &c, ValueId a, ValueId b) {
  return op1(c, OpKind::Div, {a, b});
}
ValueId square(GradCtx &c, ValueId v) { return op1(c, OpKind::Square, {v}); }

/// The adjoint of operand i of a broadcasting binary op, given its
/// full-shape contribution `full`.
ValueId toOperand(GradCtx &c, unsigned i, ValueId full) {
  return unbroadcast(c.b, full, c.type(c.x(i)).shape);
}
} // namespace

ValueId unbroadcast(Builder &b, ValueId dy, llvm::ArrayRef<int64_t> shape) {
  Shape from = b.graph().type(dy).shape;
  if (llvm::equal(from, shape))
    return dy;
  int64_t lead = int64_t(from.size()) - int64_t(shape.size());
  IntList axes;
  for (int64_t i = 0; i < int64_t(from.size()); ++i)
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  ValueId r = axes.empty() ? dy : b.reduceSum(dy, axes);
  if (llvm::equal(b.graph().type(r).shape, shape))
    return r;
  return b.reshape(r, shape);
}

// y = -x: dx = -dy.
llvm::Expected<Grads> gradNeg(GradCtx &c) { return Grads{neg(c, c.dy())}; }
// y = e^x: dx = dy * y.
llvm::Expected<Grads> gradExp(GradCtx &c) {
  return Grads{c.b.mul(c.dy(), c.y())};
}
// y = log x: dx = dy / x.
llvm::Expected<Grads> gradLog(GradCtx &c) {
  return Grads{div(c, c.dy(), c.x(0))};
}
// y = sqrt x: dx = 0.5 dy / y.
llvm::Expected<Grads> gradSqrt(GradCtx &c) {
  return Grads{div(c, c.b.scale(c.dy(), 0.5), c.y())};
}
// y = x^-1/2: dx = -0.5 dy x^-3/2 = -0.5 dy y / x.
llvm::Expected<Grads> gradRsqrt(GradCtx &c) {
  return Grads{c.b.scale(div(c, c.b.mul(c.dy(), c.y()), c.x(0)), -0.5)};
}
// y = tanh x: dx = dy (1 - y^2) = dy - dy y^2.
llvm::Expected<Grads> gradTanh(GradCtx &c) {
  return Grads{c.b.sub(c.dy(), c.b.mul(c.dy(), square(c, c.y())))};
}
// y = sigmoid x: dx = dy y (1 - y) = dy (y - y^2).
llvm::Expected<Grads> gradSigmoid(GradCtx &c) {
  return Grads{c.b.mul(c.dy(), c.b.sub(c.y(), square(c, c.y())))};
}
llvm::Expected<Grads> gradRelu(GradCtx &c) {
  return Grads{op1(c, OpKind::ReluGrad, {c.dy(), c.x(0)})};
}
llvm::Expected<Grads> gradGelu(GradCtx &c) {
  return Grads{op1(c, OpKind::GeluGrad, {c.dy(), c.x(0)}, c.attrs())};
}
llvm::Expected<Grads> gradSilu(GradCtx &c) {
  return Grads{op1(c, OpKind::SiluGrad, {c.dy(), c.x(0)})};
}
// y = x^2: dx = dy * 2x.
llvm::Expected<Grads> gradSquare(GradCtx &c) {
  return Grads{c.b.mul(c.dy(), c.b.scale(c.x(0), 2.0))};
}
// y = s x: dx = s dy.
llvm::Expected<Grads> gradScale(GradCtx &c) {
  return Grads{c.b.scale(c.dy(), c.attrs().getFloat("value"))};
}
// A cast's adjoint is cast back (the pass never asks for integer operands).
llvm::Expected<Grads> gradCast(GradCtx &c) {
  return Grads{op1(c, OpKind::Cast, {c.dy()},
                   {{"dtype", dtypeName(c.type(c.x(0)).dtype).str()}})};
}

llvm::Expected<Grads> gradAdd(GradCtx &c) {
  Grads g(2, kNoValue);
  for (unsigned i = 0; i < 2; ++i)
    if (c.wants(i))
      g[i] = toOperand(c, i, c.dy());
  return g;
}
// y = a - b: da = dy, db = -dy (negated after the reduction: fewer elements).
llvm::Expected<Grads> gradSub(GradCtx &c) {
  Grads g(2, kNoValue);
  if (c.wants(0))
    g[0] = toOperand(c, 0, c.dy());
  if (c.wants(1))
    g[1] = neg(c, toOperand(c, 1, c.dy()));
  return g;
}
// y = a b: da = dy b, db = dy a.
llvm::Expected<Grads> gradMul(GradCtx &c) {
  Grads g(2, kNoValue);
  if (c.wants(0))
    g[0] = toOperand(c, 0, c.b.mul(c.dy(), c.x(1)));
  if (c.wants(1))
    g[1] = toOperand(c, 1, c.b.mul(c.dy(), c.x(0)));
  return g;
}
// y = a / b: da = dy / b, db = -dy a / b^2 = -(dy y) / b.
llvm::Expected<Grads> gradDiv(GradCtx &c) {
  Grads g(2, kNoValue);
  if (c.wants(0))
    g[0] = toOperand(c, 0, div(c, c.dy(), c.x(1)));
  if (c.wants(1))
    g[1] = neg(c, toOperand(c, 1, div(c, c.b.mul(c.dy(), c.y()), c.x(1))));
  return g;
}

namespace {
// maximum / minimum route dy to the winning operand. The mask "a wins" is
// relu_grad(dy, a - b) for maximum (relu'(0) = 0, so a tie goes to b) and
// relu_grad(dy, b - a) for minimum; b gets the rest, dy - that.
llvm::Expected<Grads> gradMinMax(GradCtx &c, bool isMax) {
  ValueId diff = isMax ? c.b.sub(c.x(0), c.x(1)) : c.b.sub(c.x(1), c.x(0));
  ValueId toA = op1(c, OpKind::ReluGrad, {c.dy(), diff});
  Grads g(2, kNoValue);
  if (c.wants(0))
    g[0] = toOperand(c, 0, toA);
  if (c.wants(1))
    g[1] = toOperand(c, 1, c.b.sub(c.dy(), toA));
  return g;
}
} // namespace

llvm::Expected<Grads> gradMaximum(GradCtx &c) { return gradMinMax(c, true); }
llvm::Expected<Grads> gradMinimum(GradCtx &c) { return gradMinMax(c, false); }

} // namespace strata::autodiff
