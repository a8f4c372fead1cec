//===- TrainingPrecision.h - The spec's training precision as a dtype ----===//
//
// `training { precision: BF16 }` in a spec (proto/model_spec.proto) and the
// --precision flag of compile / train / verify name the dtype the compiler's
// mixed-precision pass computes in (passes/precision/MixedPrecision.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Types.h"
#include "proto/model_spec.pb.h"

namespace strata {

/// F32, BF16 or F16: the dtype `t.precision` computes in.
DType trainingPrecision(const pb::Training &t);
/// Writes `precision` (F32, BF16 or F16) into `t`.
void setTrainingPrecision(pb::Training &t, DType precision);

} // namespace strata
