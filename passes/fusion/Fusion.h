//===- Fusion.h - The fusion pass: elementwise chains into fused kernels --===//
//
// `fusion` replaces each group of FusionGroups.h by one `fused` node
// (ir/Ops.def) whose body holds the group's nodes unchanged (names, attributes,
// scopes). The node:
//  - takes the values the group reads from outside (first use order);
//  - returns the member results used outside the group or returned by the
//    graph, keeping their names and shardings;
//  - is named by `kernel="fusedN"` (unique in the graph), scoped by the
//    members' common scope prefix, and marked `bwd` when its members are.
// Internal values disappear from the graph. Nodes are re-sorted
// topologically, each unit (node or group) as early as its inputs allow but
// in original order otherwise, groups placed at their last member.
// Options: `epilogues=false` keeps matmuls out of groups, `rows=false`
// keeps row ops (softmax, norms) out, `max_inputs=N` caps the values a
// kernel reads (FusionOptions::maxInputs).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"
#include "passes/fusion/FusionGroups.h"

#include <memory>

namespace strata {

/// Fuses `g` in place (see above); returns whether anything was fused.
bool fuseGraph(Graph &g, const FusionOptions &options = {});

/// The `fusion` pass.
std::unique_ptr<Pass> createFusionPass(const FusionOptions &options = {});

} // namespace strata
