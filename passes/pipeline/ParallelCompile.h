//===- ParallelCompile.h - Logical forward graph -> pipelined parallel plan
//===//
//
// The compiler's pass order for a training step (docs: DESIGN.md):
//
//   autodiff                        microbatch graph (forward + backward)
//   mixed-precision{dtype} (bf16 / fp16 only)  16-bit compute, f32 master
//                                   state (passes/precision: why here)
//   loss-scale (with lossScaling)   the backward seeded with %loss_scale
//   megatron-seeds{tp,dp,sp}, spmd  per-device graph with collectives (only
//                                   when tp, dp or sp ask for it)
//   recompute{mode}                 after spmd, so stash bytes are per device
//   pipeline                        stages, F/B/optimizer programs, schedule
//   fusion (optional)               fused kernels in every program
//   memory                          buffers and peak bytes per device
//
// Auto recomputation needs the whole picture, so it is a loop here: plan
// with nothing recomputed, then for every rank whose peak exceeds the budget
// recompute its cheapest blocks (Recompute.h, chooseRecomputeLayers) until
// each rank fits, keeping the stage cut of the first plan.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/memory/MemoryPlan.h"
#include "passes/pipeline/Pipeline.h"
#include "passes/precision/LossScale.h"
#include "passes/precision/MixedPrecision.h"
#include "passes/recompute/Recompute.h"

namespace strata {

struct ParallelCompileOptions {
  int64_t tp = 1, dp = 1, pp = 1;
  bool sp = false;
  ScheduleSpec schedule;
  int64_t microbatches = 1;
  std::vector<int64_t> layersPerStage;
  RecomputeMode recompute = RecomputeMode::None;
  /// Peak bytes allowed per device (-1: no limit): auto recomputation
  /// recomputes blocks until every rank fits; other modes fail if one does
  /// not.
  int64_t memoryBudget = -1;
  SavedStateModel savedState = SavedStateModel::Strata;
  OptimizerConfig optimizer;
  /// ZeRO-1 optimizer programs (passes/spmd/DistributedOptimizer.h), with
  /// any pp.
  bool distributedOptimizer = false;
  /// F32, or 16-bit compute with f32 master parameters, gradients and
  /// moments (passes/precision/MixedPrecision.h).
  DType precision = DType::F32;
  /// Seed the backward with the input %loss_scale (passes/precision/
  /// LossScale.h): the gradients come out scaled, the trainer unscales them.
  bool lossScaling = false;
  /// Fuse the stage and optimizer programs (passes/fusion) before memory
  /// planning, so the plan counts the buffers the fused programs use.
  bool fusion = false;
};

struct CompiledPipeline {
  /// The microbatch graph the stages were cut from.
  Graph micro;
  PipelinePlan pipeline;
  MemoryPlan memory;
  /// Blocks recomputed in full (mode full or auto), ascending.
  llvm::SmallVector<int64_t, 8> recomputedLayers;
};

/// Runs the passes above on the logical forward graph `forward`.
llvm::Expected<CompiledPipeline>
compilePipeline(const Graph &forward, const ParallelCompileOptions &options);

} // namespace strata
