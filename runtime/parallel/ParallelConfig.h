//===- ParallelConfig.h - The layout of a training job --------------------===//
//
// How a training job spreads over devices: a mesh <pp, dp, tp> with
// sequence parallelism, ZeRO-1, a pipeline schedule and recomputation. The
// one compiler (passes/pipeline/ParallelCompile.h) builds the programs of
// any layout, serial being a mesh of one device; the one runtime
// (runtime/parallel/Trainer.h) runs them.
//
//===----------------------------------------------------------------------===//
#pragma once

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
  /// Pipeline stages, their schedule and recomputation; the microbatches
  /// per step are the training's gradAccum.
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

/// The layout a compiled plan asks for (`strata compile --tp --dp --sp --pp
/// --schedule --recompute`); a pipelined plan's cut is kept by
/// layersPerStage, read from its stages.
llvm::Expected<ParallelConfig> planLayout(const pb::Plan &plan);

} // namespace strata
