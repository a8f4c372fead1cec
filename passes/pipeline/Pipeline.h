//===- Pipeline.h - Cutting a microbatch graph into pipeline stages
//--------===//
//
// buildPipeline turns the microbatch graph (after autodiff, spmd and
// recompute) into a PipelinePlan (PipelinePlan.h): the schedule for
// (schedule, pp, microbatches), the stage cut (PipelineCut.h), F and B
// programs per virtual stage with send/recv at the boundaries, and one
// optimizer program per pipeline rank. With pp = 1 the plan has one stage
// and no messages, so every plan has the same shape.
//
// Program meshes: the microbatch graph's mesh with `pp` prepended as the
// slowest axis (Megatron's rank order: tp fastest, then dp, then pp), so
// collectives over dp and tp stay within a stage's ranks.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/optimizer/OptimizerGraph.h"
#include "passes/pipeline/PipelinePlan.h"

#include <optional>

namespace strata {

struct PipelineOptions {
  int64_t pp = 1;
  ScheduleSpec schedule;
  int64_t microbatches = 1;
  /// Blocks per virtual stage (P * V entries); empty: balance by cost.
  std::vector<int64_t> layersPerStage;
  OptimizerConfig optimizer;
  /// ZeRO-1 optimizer programs (passes/spmd/DistributedOptimizer.h); pp = 1
  /// only.
  bool distributedOptimizer = false;
};

/// Builds and verifies the plan (verifyPipelinePlan). Errors speak of the
/// configuration (schedule vs microbatches, too few blocks, a bad
/// layers-per-stage list) or of a graph that does not cut (a node scope
/// that is not embed / layers.<i> / ln_f / lm_head / loss, a value flowing
/// against the pipeline direction).
llvm::Expected<PipelinePlan> buildPipeline(const Graph &micro,
                                           const PipelineOptions &options);

namespace pipeline {
/// The messages that keep a tied parameter's copies equal: holder `holder`
/// sends its accumulated gradient to `owner` (tag `gradTag`), which sends
/// the updated parameter back (tag `newTag`).
struct TiedMessage {
  ValueId param = kNoValue; // input of the microbatch graph
  int64_t owner = 0, holder = 0;
  int64_t gradTag = 0, newTag = 0;
};

/// The optimizer program of pipeline rank `rank` (StageOptimizer.cpp):
/// AdamW for the parameters in `held` (inputs of `micro`, which the rank's
/// stages read) that it owns, with the tied-parameter messages of `tied`
/// that involve it and, when `programMesh` has a `pp` axis of size > 1, the
/// sum of squares all-reduced over pp.
llvm::Expected<Graph>
buildStageOptimizer(const Graph &micro, const std::optional<Mesh> &programMesh,
                    int64_t rank, llvm::ArrayRef<ValueId> held,
                    llvm::ArrayRef<TiedMessage> tied,
                    const OptimizerConfig &config, bool distributed);

/// A `send` / `recv` pair's attributes (see PipelinePlan.h), with the
/// provenance every inserted collective carries (ir/Ops.def).
Attrs sendAttrs(int64_t peer, int64_t tag, llvm::StringRef src,
                const llvm::Twine &reason);
Attrs recvAttrs(int64_t peer, int64_t tag, const TensorType &type,
                llvm::StringRef src, const llvm::Twine &reason);
} // namespace pipeline

} // namespace strata
