//===- CombineAllReduce.h - One all_reduce for many small ones
//-------------===//
//
// `combine-all-reduce` merges independent all_reduce nodes of the same
// axes, reduce kind and dtype into one: their operands flattened and
// concatenated, one all_reduce, then each result sliced out and reshaped
// back under its old name (XLA's AllReduceCombiner; Megatron-LM's gradient
// buckets). Each collective pays a latency per message and a wake-up of
// every peer, so an optimizer program's dozens of per-parameter reductions
// cost far more than their bytes; combined they are one call.
//
// Grouping is greedy in program order: an all_reduce joins the open group of
// its key unless its operand depends on a member (which would make the
// combined node its own ancestor) or the group would exceed `maxBytes`.
// The graph is then re-sorted topologically with each group as one unit,
// placed as late as its last member. Elementwise sums are unchanged; the
// reduction order of an element inside the collective may differ from the
// separate calls (only for groups of 3 or more ranks).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/Pass.h"

#include <memory>

namespace strata {

/// Default bucket: 64 MiB per combined all_reduce.
inline constexpr int64_t kDefaultAllReduceBucketBytes = int64_t(64) << 20;

/// Combines in place (see above); returns how many all_reduce nodes were
/// removed (members minus combined nodes).
int64_t combineAllReduces(Graph &g,
                          int64_t maxBytes = kDefaultAllReduceBucketBytes);

/// The `combine-all-reduce` pass, {bucket_bytes=N}.
std::unique_ptr<Pass>
createCombineAllReducePass(int64_t maxBytes = kDefaultAllReduceBucketBytes);

} // namespace strata
