//===- PrecisionFlag.cpp - --precision and the loss-scale flags -----------===//
#include "tools/strata/PrecisionFlag.h"

#include "frontends/TrainingPrecision.h"
#include "passes/precision/MixedPrecision.h"
#include "runtime/train/LossScaler.h"
#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

using namespace llvm;

namespace strata {

PrecisionFlag::PrecisionFlag(cl::SubCommand &cmd)
    : value("precision",
            cl::desc("Training precision: f32, bf16 or fp16 (16-bit compute "
                     "with fp32 master weights, gradients and AdamW "
                     "moments; default: the spec's training.precision)"),
            cl::value_desc("f32|bf16|fp16"), cl::sub(cmd),
            cl::cat(strataCategory())),
      lossScale("loss-scale",
                cl::desc("A constant loss scale (Megatron's --loss-scale); "
                         "without it fp16 scales dynamically and bf16 does "
                         "not scale"),
                cl::value_desc("S"), cl::sub(cmd), cl::cat(strataCategory())),
      initialLossScale("initial-loss-scale",
                       cl::desc("The dynamic loss scale's start (default "
                                "2^32)"),
                       cl::value_desc("S"), cl::sub(cmd),
                       cl::cat(strataCategory())),
      minLossScale("min-loss-scale",
                   cl::desc("The dynamic loss scale's floor (default 1)"),
                   cl::value_desc("S"), cl::sub(cmd),
                   cl::cat(strataCategory())),
      lossScaleWindow("loss-scale-window",
                      cl::desc("Steps without inf / nan gradients before the "
                               "dynamic loss scale doubles (default 1000)"),
                      cl::value_desc("N"), cl::sub(cmd),
                      cl::cat(strataCategory())),
      hysteresis("hysteresis",
                 cl::desc("Steps with inf / nan gradients before the dynamic "
                          "loss scale halves (default 2)"),
                 cl::value_desc("N"), cl::sub(cmd), cl::cat(strataCategory())) {
}

Error PrecisionFlag::apply(pb::Training &t) const {
  if (Error e = checkFlags(
          {oneOf(value, {"f32", "bf16", "fp16"},
                 "the dtype training computes in"),
           inInterval(lossScale, 0, HUGE_VAL, Ends::OpenLow,
                      "a constant loss scale"),
           inInterval(initialLossScale, 0, HUGE_VAL, Ends::OpenLow,
                      "the dynamic loss scale's start"),
           inInterval(minLossScale, 0, HUGE_VAL, Ends::OpenLow,
                      "the dynamic loss scale's floor"),
           atLeast(lossScaleWindow, 1,
                   "steps without inf / nan before the scale doubles"),
           atLeast(hysteresis, 1,
                   "steps with inf / nan before the scale halves")}))
    return e;
  if (given(value))
    setTrainingPrecision(t, *parseTrainingPrecision(value));
  if (given(lossScale))
    t.set_loss_scale(lossScale);
  if (given(initialLossScale))
    t.set_initial_loss_scale(initialLossScale);
  if (given(minLossScale))
    t.set_min_loss_scale(minLossScale);
  if (given(lossScaleWindow))
    t.set_loss_scale_window(lossScaleWindow);
  if (given(hysteresis))
    t.set_hysteresis(hysteresis);
  if (t.loss_scale() > 0 && t.precision() == pb::Training::F32)
    return usageError("--loss-scale scales the loss of 16-bit training (add "
                      "--precision fp16 or bf16, or drop --loss-scale)");
  if (auto c = lossScalingOf(t))
    return c->check();
  return Error::success();
}

StringRef hardwarePrecisionOf(const pb::Training &t) {
  return trainingPrecision(t) == DType::F32 ? "f32" : "bf16";
}

} // namespace strata
