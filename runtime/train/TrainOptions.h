//===- TrainOptions.h - What a training step is ---------------------------===//
//
// The options of the one trainer (runtime/parallel/Trainer.h) that do not
// depend on the layout, what a step reports, and how it gets its batches.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/optimizer/OptimizerGraph.h"
#include "runtime/parallel/GradReduceOptions.h"
#include "runtime/train/LRSchedule.h"
#include "runtime/train/LossScaler.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace strata {

struct TrainOptions {
  int64_t gradAccum = 1;
  LRSchedule schedule;
  OptimizerConfig optimizer;
  uint64_t seed = 1337; // init, dropout
  /// Fuse elementwise chains of the programs (passes/fusion); the CPU
  /// compiles their kernels once, at create (runtime/cpu/FusedKernels.h).
  bool fusion = false;
  /// F32, or BF16 / F16: mixed precision (passes/precision).
  DType precision = DType::F32;
  /// The data-parallel gradient reduction's buckets and overlap
  /// (runtime/parallel/GradReducer.h).
  GradReduceOptions gradReduce;
  /// Loss scaling (runtime/train/LossScaler.h): the programs take the scale
  /// as an input; a step whose gradients hold inf / nan is skipped.
  std::optional<LossScalerConfig> lossScaling;
  /// Test hook: at these steps (0-based) the trainer makes one gradient
  /// element of the last rank infinite before the check, as an overflow
  /// would (test/precision/LossScalingTest.cpp).
  std::vector<int64_t> injectInfAt;
};

struct StepStats {
  double loss = 0;     // mean over the step's microbatches
  double gradNorm = 0; // global norm before clipping
  double lr = 0;
  /// With loss scaling: the scale the step ran with, and whether its
  /// gradients held inf / nan, so no update was made (gradNorm is then nan).
  double lossScale = 0;
  bool skipped = false;
};

/// Writes microbatch `micro` of the current step as i32 [B,S] tokens/labels.
using BatchFn =
    std::function<void(int64_t micro, int32_t *tokens, int32_t *labels)>;

} // namespace strata
