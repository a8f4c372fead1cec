//===- ParallelPlan.h - The partitioned programs of a training job ---------===//
//
// From the logical forward graph to the three per-device programs a parallel
// training job runs on a mesh<dp=D,tp=T>:
//
//   microbatch  autodiff, megatron-seeds{tp,dp,sp}, spmd: tokens, labels and
//               the rank's parameter shards -> loss and gradients, both
//               partial sums over dp (reduced once per step, after
//               accumulation)
//   optimizer   the AdamW step graph (passes/optimizer) with the gradients
//               marked partial over dp, partitioned by spmd: the dp
//               all-reduce of the gradients happens here. With the
//               distributed optimizer (ZeRO-1), the AdamW moments are split
//               over dp along a dim tp leaves whole, the gradients' squares
//               and clipped values are annotated with that layout (so their
//               dp reduction is a reduce_scatter), each rank updates its
//               shard, and the new parameter shards are all-gathered.
//   eval        the forward graph without dropout, partitioned like the
//               microbatch program (its loss is partial over dp)
//
// Configuration errors (heads, KV heads, features or padded vocab not
// divisible by tp, batch not divisible by dp, sequence by tp with sp) come
// from megatron-seeds before anything runs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/optimizer/OptimizerGraph.h"
#include "passes/pipeline/Schedule.h"
#include "passes/recompute/Recompute.h"

#include "llvm/Support/Error.h"

namespace strata {

namespace pb {
class Plan;
} // namespace pb

struct ParallelConfig {
  int64_t tp = 1;
  int64_t dp = 1;
  bool sp = false;                   // sequence parallelism (needs tp > 1)
  bool distributedOptimizer = false; // ZeRO-1 over dp
  /// Pipeline stages, their schedule and recomputation: a config with
  /// pp > 1 or recomputation runs the pipeline runtime (PipelineTrainer.h),
  /// whose microbatches per step are the training's gradAccum.
  int64_t pp = 1;
  ScheduleSpec schedule;
  RecomputeMode recompute = RecomputeMode::None;
  /// Blocks per virtual stage (empty: balanced by cost).
  std::vector<int64_t> layersPerStage;
  /// Peak bytes per device for --recompute auto (-1: none).
  int64_t memoryBudget = -1;
  bool pipelined() const { return pp > 1 || recompute != RecomputeMode::None; }
  int64_t numDevices() const { return tp * dp * pp; }
};

struct ParallelPrograms {
  Graph micro;
  Graph optimizer;
  Graph eval;
};

/// The layout a compiled plan asks for (`strata compile --tp --dp --sp --pp
/// --schedule --recompute`); a pipelined plan's cut is kept by
/// layersPerStage, read from its stages.
llvm::Expected<ParallelConfig> planLayout(const pb::Plan &plan);

/// Builds and verifies the three programs (see the file comment).
llvm::Expected<ParallelPrograms>
buildParallelPrograms(const Graph &forward, const Graph &evalForward,
                      const OptimizerConfig &optimizer,
                      const ParallelConfig &config);

} // namespace strata
