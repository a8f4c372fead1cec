//===- PrecisionFlag.h - --precision and the loss-scale flags -------------===//
//
// The training precision flag of compile, train and verify: it overrides
// the spec's training.precision (docs/mixed-precision.md), and Megatron-LM's
// loss-scale flags, which override the spec's training.loss_scale,
// initial_loss_scale, min_loss_scale, loss_scale_window and hysteresis
// (runtime/train/LossScaler.h). `strata estimate` has its own --precision
// (the number format of the hardware model), so these are registered per
// verb, not in LayoutFlags.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/model_spec.pb.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

struct PrecisionFlag {
  explicit PrecisionFlag(llvm::cl::SubCommand &cmd);

  /// Checks the flags and writes those given into `training`; then checks
  /// the loss scaling the result asks for.
  llvm::Error apply(pb::Training &training) const;
  llvm::Error apply(pb::ModelSpec &spec) const {
    return apply(*spec.mutable_training());
  }

  llvm::cl::opt<std::string> value;
  llvm::cl::opt<double> lossScale, initialLossScale, minLossScale;
  llvm::cl::opt<int64_t> lossScaleWindow, hysteresis;
};

/// The hardware model's number format (perf/Hardware.h) that runs a spec's
/// training precision, the default of estimate's and plan's --precision:
/// "f32" for f32, "bf16" for bf16 and fp16 (tensor cores run both at one
/// peak, hardware.proto's peak_bf16_flops).
llvm::StringRef hardwarePrecisionOf(const pb::Training &t);

} // namespace strata
