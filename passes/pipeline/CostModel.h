//===- CostModel.h - FLOPs of nodes, for stage balancing and recompute
//-----===//
//
// A static estimate of the floating-point work of one node from its types
// (per device in a partitioned graph): 2 FLOPs per multiply-add for matmul
// and attention (causal masking not discounted, as in Megatron-LM's
// formula), a small per-element constant for elementwise, normalization and
// loss ops, and 0 for shape ops, collectives and point-to-point messages
// (their cost is bytes, not FLOPs). Stage balancing compares these sums, and
// auto recomputation minimizes the FLOPs it adds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace strata {

/// FLOPs of node `n` of `g` (see the file comment).
double nodeFlops(const Graph &g, const Node &n);

} // namespace strata
