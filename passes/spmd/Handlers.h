//===- Handlers.h - Per-op partitioning rules of the spmd pass
//-------------===//
//
// A handler partitions the partitioner's current node: it picks the operand
// layouts it needs (Partitioner::reshard), emits the local node(s) and binds
// the node's results. Spmd.cpp dispatches every op of ir/Ops.def to one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/spmd/Partitioner.h"

namespace strata::spmd {

/// How pending partial sums pass through an elementwise-like op.
enum class Linearity {
  None,      ///< nonlinear: every operand must be a whole value
  Sum,       ///< add, sub: partial over the axes all operands are partial over
  OneFactor, ///< mul: one partial operand passes
  First,     ///< linear in operand 0 only (dropout, neg, div, grad ops' dy)
};

/// The shape of an elementwise-like op for planElementwise().
struct ElementwiseSpec {
  Linearity linearity = Linearity::None;
  /// Result dims that must stay whole (softmax's last dim, ...).
  llvm::SmallVector<int64_t, 2> wholeDims;
  /// Operand priority when their layouts disagree; default operand order.
  llvm::SmallVector<unsigned, 4> order;
};

/// The operands of an elementwise-like node resharded to one common layout
/// (operands broadcast numpy-style against `shape`) and the result sharding.
struct ElementwisePlan {
  Sharding result;
  llvm::SmallVector<ValueId, 4> operands;
};

/// Merges the operands' layouts (first split wins, axes used once), applies
/// the result hint where it turns a partial-sum reduction into a
/// reduce-scatter, and reshards the operands. `shape` is the logical shape
/// operands broadcast against (the result's).
llvm::Expected<ElementwisePlan> planElementwise(Partitioner &p,
                                                const ElementwiseSpec &spec,
                                                llvm::ArrayRef<int64_t> shape);

/// The layout of an operand of logical type `t` broadcast against `shape`
/// under result dims `dims` (broadcast dims are whole).
Sharding alignedSharding(const Dims &dims, llvm::ArrayRef<int64_t> shape,
                         const TensorType &t);

/// Copies the origin of the first partial operand to `v` (linear ops).
void inheritOrigin(Partitioner &p, llvm::ArrayRef<ValueId> operands, ValueId v);

// Elementwise.cpp: unary, binary, grad-of-activation, dropout, creation,
// adamw_update.
llvm::Error partitionElementwise(Partitioner &p, Linearity linearity);
llvm::Error partitionCreation(Partitioner &p);
// DotHandler.cpp
llvm::Error partitionMatMul(Partitioner &p);
// ShapeHandlers.cpp
llvm::Error partitionReshape(Partitioner &p);
llvm::Error partitionTranspose(Partitioner &p);
llvm::Error partitionBroadcast(Partitioner &p);
llvm::Error partitionSlice(Partitioner &p);
llvm::Error partitionConcat(Partitioner &p);
llvm::Error partitionReduce(Partitioner &p);
// NormAttention.cpp
llvm::Error partitionNorm(Partitioner &p);
llvm::Error partitionNormGrad(Partitioner &p);
llvm::Error partitionSoftmax(Partitioner &p);
llvm::Error partitionAttention(Partitioner &p);
llvm::Error partitionRope(Partitioner &p);
// VocabParallel.cpp
llvm::Error partitionGather(Partitioner &p);
llvm::Error partitionScatterAdd(Partitioner &p);
llvm::Error partitionCrossEntropy(Partitioner &p);
llvm::Error partitionCrossEntropyGrad(Partitioner &p);

} // namespace strata::spmd
