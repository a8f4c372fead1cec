//===- FusionGroups.h - Which nodes the fusion pass puts in one kernel ----===//
//
// The grouping half of the `fusion` pass (Fusion.h builds the fused nodes).
// A group is a set of elementwise nodes over one iteration space (the
// domain: every member's result shape), optionally led by a matmul whose
// result only the group reads (an epilogue anchor), or built around one row
// op (a reduction over the last dim). The rules:
//
//  - Fusable: elementwise unary/binary ops (broadcasting operands), scale,
//    cast, the unary gradients, dropout and dropout_grad (counter-based:
//    the mask is a function of the element's index), with f32/f64 results
//    or bf16/f16 ones (16-bit storage: loaded as f32, computed in f32 and
//    rounded to nearest even when stored; values inside a kernel stay f32),
//    except casts of parameters (mixed precision's 16-bit parameter copies,
//    which the memory plan counts as parameters).
//    Dropout of a split value stays unfused (its global index needs the
//    value's place in the mesh, which a kernel body does not carry).
//  - Column sums: `reduce_sum` over every dim but the last (a bias gradient)
//    of a group member's result joins that group as an epilogue (the kernel
//    sums the columns while it writes the rows); no member may read a sum.
//  - Row ops: softmax, softmax_grad, layer_norm, rms_norm, layer_norm_grad
//    and rms_norm_grad over f32/f64/bf16/f16 rows of at most kMaxFusedRow
//    elements,
//    with the norms' weight and bias read from outside. The domain is the
//    op's input shape; elementwise producers of its row operands join as a
//    prologue (residual add + layer norm, scale + mask + softmax) and
//    consumers of its row result as an epilogue (a norm gradient + the
//    residual gradient it is added to), column sums included. The kernel
//    keeps the prologue's row in a scratch row, so nothing is recomputed.
//  - Producer -> consumer: a node joins the groups of the producers of its
//    operands; siblings: groups reading the same value join, so the value is
//    read once (a single element, free to read again, joins nothing). Anchors:
//    a matmul joins as the head of its only consumer's group when its result
//    has that shape and no other user.
//  - Legality: the union stays convex (no path leaves the group and comes
//    back, so the fused node has a place in topological order); forward and
//    backward (`bwd`) nodes never share a group (pipeline F/B programs split
//    there); at most one anchor (matmul or row op).
//  - Cost: no value is recomputed. A member result that is used outside the
//    group becomes an extra kernel output (it is written once, as unfused;
//    what fusion saves is every re-read and the writes of the internal
//    values). A lone elementwise node is left alone: a kernel of one op
//    saves nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace strata {

struct FusionOptions {
  /// Let matmuls lead groups as anchors (elementwise epilogues).
  bool matmulEpilogues = true;
  /// Let column sums (bias gradients) end groups.
  bool columnSums = true;
  /// Let row ops (softmax, norms and their gradients) take prologues and
  /// epilogues.
  bool rowOps = true;
  /// The most values a kernel reads, counted as the sum of its members'
  /// operands (an upper bound). Every input is a kernel parameter, and a
  /// CUDA kernel's parameters take at most 32,764 bytes: 1024 pointers
  /// leave room for the sizes and results. It splits the optimizer's
  /// grad-norm chain (one add per parameter) into kernels of <= 512 adds.
  int64_t maxInputs = 1024;
};

struct FusionGroup {
  /// Node indices, ascending; the anchor or row op (if any) is among them.
  llvm::SmallVector<int32_t, 8> members;
  int32_t anchor = -1; ///< node index of the matmul anchor, or -1
  int32_t row = -1;    ///< node index of the row op, or -1
};

/// The groups of `g` under the rules above, each with two or more members,
/// ordered by their first member.
std::vector<FusionGroup> findFusionGroups(const Graph &g,
                                          const FusionOptions &options);

/// Whether the fusion rules above let `n` be a non-anchor group member.
bool isFusableElementwise(const Graph &g, const Node &n);

/// Whether `op` reduces over the last dim of its row operands (softmax,
/// norms and their gradients: the row ops above).
bool isRowOp(OpKind op);

/// Whether the fusion rules above let row op `n` lead a group.
bool isFusableRowOp(const Graph &g, const Node &n);

} // namespace strata
