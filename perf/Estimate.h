//===- Estimate.h - Step time, throughput and memory of a compiled plan ---===//
//
// estimatePlan turns a compiled pipeline (passes/pipeline/ParallelCompile.h)
// into SimPrograms (every node of every F, B and optimizer program with its
// predicted time: OpTime.h for compute, Collectives.h for collectives and
// messages), simulates the schedule (Simulator.h) and reports the step time
// with its breakdown, tokens/s, MFU (model FLOPs, no recomputation) and HFU
// (recomputation included), both against the device's dense matmul peak at
// the chosen precision, and the peak memory per device of the memory plan.
//
// strata's programs run their collectives in program order on the device's
// one stream, so their time is exposed; the breakdown says by group. The
// runtime's dp gradient reduction is not in the programs: it runs in
// buckets on a second stream overlapping the backward (GradBuckets.h), and
// only its wait before the optimizer is exposed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "perf/Collectives.h"
#include "perf/Hardware.h"
#include "perf/Simulator.h"

#include <vector>

namespace strata {

struct EstimateOptions {
  Precision precision = Precision::F32;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  bool recordEvents = false;
  /// The runtime's dp gradient bucket size (runtime/parallel/
  /// GradReduceOptions.h: Megatron's 40M f32 elements).
  int64_t gradientBucketBytes = int64_t(40'000'000) * 4;
};

/// What a step does, from the model (frontends/ModelStats.h).
struct StepWork {
  double tokens = 0;        // tokens per optimizer step
  double modelFlops = 0;    // forward + backward, no recomputation
  double hardwareFlops = 0; // with the plan's recomputation
};

struct PlanEstimate {
  double stepTime = 0;
  /// Seconds per phase, averaged over the pipeline ranks (each rank's
  /// phases sum to the step time, so these do too).
  std::array<double, kNumPhases> breakdown{};
  SimResult sim;
  double tokensPerSecond = 0, mfu = 0, hfu = 0, peakFlops = 0;
  int64_t devices = 1;
  /// Peak bytes per device of each pipeline rank, and their maximum.
  std::vector<int64_t> peakMemory;
  int64_t maxPeakMemory = 0;
};

/// The device mesh of a compiled plan: (pp,) dp, tp as its programs use.
Mesh planMesh(const CompiledPipeline &compiled);

/// Builds the SimPlan of `compiled` under `hw` (see the file comment).
llvm::Expected<SimPlan> buildSimPlan(const CompiledPipeline &compiled,
                                     const pb::Hardware &hw,
                                     const EstimateOptions &options);

/// Simulates and summarizes; `peakMemory` per pipeline rank (the memory
/// plan's). Errors: a precision the device lacks, more devices than the
/// cluster has, a schedule that deadlocks.
llvm::Expected<PlanEstimate> estimatePlan(const CompiledPipeline &compiled,
                                          const pb::Hardware &hw,
                                          const StepWork &work,
                                          std::vector<int64_t> peakMemory,
                                          const EstimateOptions &options);

} // namespace strata
