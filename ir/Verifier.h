//===- Verifier.h - Graph invariants
//---------------------------------------===//
//
// Checks SSA order (every operand defined before use), unique names, operand
// and result counts, result types against shape inference, sharding ranks and
// mesh axes, and outputs. Messages name the node (%result = op) and its scope.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/Support/Error.h"

namespace strata {

/// Checks every invariant above; the first violation is the error.
llvm::Error verifyGraph(const Graph &g);

/// Checks that the attributes an op's rules read (Ops.def) have the kind they
/// expect, so typed getters cannot abort; unknown attributes are allowed.
llvm::Error verifyNodeAttrs(OpKind op, const Attrs &attrs);
/// The same for graph-input attributes (`param`, `init`, `std`).
llvm::Error verifyInputAttrs(const Attrs &attrs);
/// Checks a `fused` node's body against its attributes and operand types
/// (Ops.def): a verified graph without nested fused nodes or mesh ops, named
/// by the `kernel` attribute, whose inputs have the operand types. Returns
/// the result types (the body's output types).
llvm::Expected<llvm::SmallVector<TensorType, 1>>
verifyFusedNode(const Attrs &attrs, const Graph *body,
                llvm::ArrayRef<TensorType> operandTypes);
/// Checks that `s` fits `type` on `mesh`: one entry per dim, axes that exist
/// (each used once), split dims divisible by the product of their axis sizes
/// (unless `localType`: the type is a shard's, as in a partitioned graph).
llvm::Error verifySharding(const Sharding &s, const TensorType &type,
                           const Mesh *mesh, bool localType = false);

} // namespace strata
