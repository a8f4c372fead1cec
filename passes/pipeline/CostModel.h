//===- CostModel.h - FLOPs of nodes, for stage balancing and recompute
//-----===//
//
// A static estimate of the floating-point work of one node from its types
// (per device in a partitioned graph): 2 FLOPs per multiply-add for matmul
// and attention (causal masking not discounted, as in Megatron-LM's
// formula), a small per-element constant for elementwise, normalization and
// loss ops, and 0 for shape ops, collectives and point-to-point messages
// (their cost is bytes, not FLOPs).
//
// Stage balancing and auto recomputation weigh nodes by nodeCost: these
// FLOPs by default, or, while a ScopedNodeCost is alive on the thread, the
// function it installs (perf/OpTime.h's predicted seconds on a known
// cluster: `strata estimate` and `strata plan`), so a memory-bound LM head
// or loss weighs what it costs on that device rather than its FLOPs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <functional>
#include <string>

namespace strata {

/// FLOPs of node `n` of `g` (see the file comment).
double nodeFlops(const Graph &g, const Node &n);

/// Elements of the largest operand or result of `n`: what a memory-bound
/// kernel walks (also the op table's measure, perf/OpTime.h).
double largestTensorElements(const Graph &g, const Node &n);

/// The weight the stage cut and auto recomputation give node `n`: nodeFlops,
/// or the installed ScopedNodeCost's function.
double nodeCost(const Graph &g, const Node &n);
/// "FLOPs" or "predicted time": what nodeCost measures, for reports.
const char *nodeCostName();
/// A nodeCost sum for people: "4.7 GFLOP", or "12.3 ms" under a time model.
std::string formatNodeCost(double cost);

/// Installs `seconds` as nodeCost on this thread for the scope's lifetime
/// (nested scopes restore the previous one).
class ScopedNodeCost {
public:
  explicit ScopedNodeCost(
      std::function<double(const Graph &, const Node &)> seconds);
  ~ScopedNodeCost();
  ScopedNodeCost(const ScopedNodeCost &) = delete;
  ScopedNodeCost &operator=(const ScopedNodeCost &) = delete;

private:
  std::function<double(const Graph &, const Node &)> previous_;
};

} // namespace strata
