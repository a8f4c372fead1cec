//===- LossScaler.h - Megatron-LM's fp16 loss scale ------------*- C++ -*-===//
//
// The loss scale of a 16-bit run, as Megatron-LM's grad scalers
// (megatron/core/optimizer/grad_scaler.py) keep it:
//
//   ConstantGradScaler (--loss-scale S): the scale is S, always.
//   DynamicGradScaler (fp16 without --loss-scale): starts at
//     --initial-loss-scale (2^32); after each step, with found_inf the
//     step's gradients held an inf or nan (on any rank):
//       found_inf:  growth_tracker = 0; hysteresis_tracker -= 1;
//                   if hysteresis_tracker <= 0:
//                     scale = max(scale * backoff (0.5), --min-loss-scale (1))
//       else:       growth_tracker += 1;
//                   if growth_tracker == --loss-scale-window (1000):
//                     growth_tracker = 0;
//                     hysteresis_tracker = --hysteresis (2);
//                     scale = scale * growth (2)
//     The scale is an fp32 number (Megatron's is a float32 tensor), the
//     hysteresis is restored only when the scale grows.
//
// Either way a step whose gradients hold inf / nan is skipped: no
// parameter or moment update, the learning-rate schedule and AdamW's step
// count stay (Megatron's optimizer.step() returns update_successful=False,
// the scheduler does not step), the iteration (data, dropout) advances.
// The trainer does this (runtime/parallel/Trainer.h); the state below is
// saved in checkpoints (the three numbers of Megatron's state_dict).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/model_spec.pb.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>

namespace strata {

/// Megatron-LM's loss-scale arguments, with its defaults.
struct LossScalerConfig {
  /// --loss-scale: > 0 a constant scale; 0 the dynamic scaler.
  double staticScale = 0;
  /// --initial-loss-scale
  double initialScale = 4294967296.0; // 2^32
  /// --min-loss-scale
  double minScale = 1;
  /// --loss-scale-window: steps without inf / nan before the scale grows.
  int64_t window = 1000;
  /// --hysteresis: steps with inf / nan before the scale backs off.
  int64_t hysteresis = 2;
  // Megatron's get_megatron_optimizer fixes these two.
  static constexpr float kGrowth = 2.0f, kBackoff = 0.5f;

  /// What is wrong with the numbers, as a flag would say it; success if
  /// nothing.
  llvm::Error check() const;
};

/// The loss scaling a spec's training section asks for: FP16 scales
/// (dynamically unless loss_scale is set), BF16 only with loss_scale, F32
/// never.
std::optional<LossScalerConfig> lossScalingOf(const pb::Training &t);

/// The precision and loss scaling of `t` in words, as `strata inspect`
/// shows them: "fp16 (fp32 master weights, gradients and moments), dynamic
/// loss scale 2^32 (window 1000, hysteresis 2, min 1)".
std::string precisionSummary(const pb::Training &t);
/// The same as JSON: {"precision", "loss_scale": null or {"dynamic",
/// "scale" (static or initial), "window", "hysteresis", "min"}}.
llvm::json::Object precisionJson(const pb::Training &t);

/// The state machine above.
class LossScaler {
public:
  explicit LossScaler(const LossScalerConfig &config);

  /// The scale the next step's loss is multiplied by.
  float scale() const { return scale_; }
  bool dynamic() const { return config_.staticScale <= 0; }
  /// After a step: whether its gradients held an inf or nan anywhere.
  void update(bool foundInf);

  int64_t growthTracker() const { return growthTracker_; }
  int64_t hysteresisTracker() const { return hysteresisTracker_; }

  /// {"scale", "growth_tracker", "hysteresis_tracker"}: Megatron's
  /// state_dict; the scale round-trips bitwise (an fp32 number printed as a
  /// double).
  llvm::json::Value toJSON() const;
  /// Restores toJSON's state; an error says what is missing.
  llvm::Error fromJSON(const llvm::json::Value &state);

private:
  LossScalerConfig config_;
  float scale_;
  int64_t growthTracker_ = 0;
  int64_t hysteresisTracker_;
};

} // namespace strata
