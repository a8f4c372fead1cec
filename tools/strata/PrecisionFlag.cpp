//===- PrecisionFlag.cpp - --precision f32|bf16|fp16 ----------------------===//
#include "tools/strata/PrecisionFlag.h"

#include "frontends/TrainingPrecision.h"
#include "passes/precision/MixedPrecision.h"
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
            cl::cat(strataCategory())) {}

Error PrecisionFlag::apply(DType &precision) const {
  if (!given(value))
    return Error::success();
  if (Error e = checkFlags({oneOf(value, {"f32", "bf16", "fp16"},
                                  "the dtype training computes in")}))
    return e;
  precision = *parseTrainingPrecision(value);
  return Error::success();
}

Error PrecisionFlag::apply(pb::ModelSpec &spec) const {
  DType precision = trainingPrecision(spec.training());
  if (Error e = apply(precision))
    return e;
  setTrainingPrecision(*spec.mutable_training(), precision);
  return Error::success();
}

} // namespace strata
