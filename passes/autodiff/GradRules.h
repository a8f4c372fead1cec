//===- GradRules.h - Per-op gradient rules of the autodiff pass -----------===//
//
// One rule per op of ir/Ops.def (the table in Autodiff.cpp static_asserts the
// count and the linker checks that every rule is defined). A rule sees the
// forward node and the adjoints of its results and appends the nodes that
// compute the adjoints of its operands with the builder. The pass owns naming,
// accumulation of several contributions, and the backward marker; a rule only
// builds the math.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Builder.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace strata::autodiff {

/// What a rule sees. `b` appends to the graph being differentiated, with the
/// scope of the forward node already set.
struct GradCtx {
  Builder &b;
  /// A copy of the forward node (appending nodes may move the original).
  Node node;
  /// Adjoint of each result; kNoValue for a result that needs none.
  llvm::SmallVector<ValueId, 3> dys;
  /// Whether operand i needs its adjoint.
  llvm::SmallVector<bool, 4> needed;

  ValueId x(unsigned i) const { return node.operands[i]; }
  ValueId y(unsigned i = 0) const { return node.results[i]; }
  ValueId dy(unsigned i = 0) const { return dys[i]; }
  bool wants(unsigned i) const { return needed[i]; }
  /// A copy: building nodes may move the graph's values, so a reference
  /// would dangle after the next `b.create`.
  TensorType type(ValueId v) const { return b.graph().type(v); }
  const Attrs &attrs() const { return node.attrs; }
};

/// Adjoint per operand, kNoValue where not computed. A rule must compute every
/// operand with `wants(i)`; it may compute more (a fused grad op yields all).
using Grads = llvm::SmallVector<ValueId, 4>;
using GradRule = llvm::Expected<Grads> (*)(GradCtx &);

#define OP(Enum, Name, NumOperands, NumResults)                                \
  llvm::Expected<Grads> grad##Enum(GradCtx &c);
#include "ir/Ops.def"

/// Sums `dy` (of a broadcast result) back to `shape`: reduce_sum over the
/// broadcast dims, then a reshape to `shape`. Returns `dy` when the shapes
/// match.
ValueId unbroadcast(Builder &b, ValueId dy, llvm::ArrayRef<int64_t> shape);

/// The error for an op without a gradient (grad ops, optimizer, collectives).
llvm::Error noGradient(const GradCtx &c);

} // namespace strata::autodiff
