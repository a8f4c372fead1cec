//===- GradReduction.h - The dp gradient reductions an optimizer implies --===//
//
// An optimizer program whose gradient inputs carry `dp_reduce`
// (StageOptimizer.cpp) takes them already reduced over dp: the runtime
// reduces each gradient buffer in place, in buckets overlapping the
// backward (runtime/parallel/GradReducer.h). These functions spell those
// reductions out as IR for the tools that count collectives:
// `inspect --collectives` lists them, `estimate` costs them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

namespace strata {

/// One node per reduced gradient input of `opt`: all_reduce over dp, or
/// reduce_scatter over dp along `dp_dim` (ZeRO-1), on the gradient's
/// unreduced local type, with the provenance inserted collectives carry.
/// Empty (no nodes) when nothing is reduced.
Graph gradientReductions(const Graph &opt);

/// `opt` with the reductions in front: each reduced gradient input becomes
/// an input of the unreduced type followed by its reduction, whose result
/// the program reads. The program as it would run if the reductions were
/// not overlapped (what `estimate` costs).
Graph withGradientReductions(const Graph &opt);

/// The dim along which output `o` of `opt` (`%new.<p>`, not a moment) is
/// split over dp: the parameter shard the runtime gathers; -1 if none.
int64_t gatheredDim(const Graph &opt, size_t o);

/// One all_gather over dp per output of `opt` with a gatheredDim, from the
/// shard to the parameter's layout. Empty when nothing is gathered.
Graph parameterGathers(const Graph &opt);

/// The node index after which output `out` of a backward program `g` is
/// written for good (when a dp bucket holding it may be reduced): its
/// defining node, or the program's end when the output is a view, an input,
/// or read again later.
size_t gradientFinalNode(const Graph &g, ValueId out);

/// Whether `g` has a collective over the dp axis (its dp traffic would
/// interleave with a bucket's reduction on the same communicator).
bool usesDpAxis(const Graph &g);

} // namespace strata
