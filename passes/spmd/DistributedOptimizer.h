//===- DistributedOptimizer.h - The optimizer graph under data parallelism
//-===//
//
// How the AdamW graph (passes/optimizer/OptimizerGraph.h) is laid out over
// dp before the spmd partitioner runs on it:
//  - the gradients are partial sums over dp (each dp rank accumulated its
//    share of the batch), so partitioning reduces each once per step;
//  - with the distributed optimizer (ZeRO-1, Megatron-LM's
//    --use-distributed-optimizer) each parameter's moments, gradient squares
//    and clipped gradient are split over dp along the first dim tp leaves
//    whole and dp divides (1-d tp-split biases keep theirs whole), so the
//    partitioner reduce-scatters the gradients and every dp rank updates one
//    shard. gatherUpdatedParams then all-gathers back to the parameter's
//    layout only the updated shards the program itself reads again (a tied
//    parameter's new value sent to another pipeline rank); every other
//    `new.<p>` stays the program's output as this rank's dp shard, which the
//    runtime all-gathers in buckets overlapping the next forward
//    (runtime/parallel/ParamGatherer.h, Megatron's overlap_param_gather).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace strata {

/// Seeds the shardings described above on an unpartitioned optimizer graph
/// whose inputs carry the parameters' (tp) shardings. No-op for dp == 1.
void seedDataParallelOptimizer(Graph &opt, int64_t dp, bool distributed);

/// After partitioning a distributed optimizer graph: every `new.<p>` that is
/// p's dp shard is checked to be one, and those with `inProgram(p)` are
/// all-gathered (with provenance) into p's layout in the program.
llvm::Error
gatherUpdatedParams(Graph &opt,
                    llvm::function_ref<bool(llvm::StringRef)> inProgram);

} // namespace strata
