//===- TrainingPrecision.cpp - The spec's training precision as a dtype --===//
#include "frontends/TrainingPrecision.h"

#include "llvm/Support/ErrorHandling.h"

namespace strata {

DType trainingPrecision(const pb::Training &t) {
  switch (t.precision()) {
  case pb::Training::F32:
    return DType::F32;
  case pb::Training::BF16:
    return DType::BF16;
  case pb::Training::FP16:
    return DType::F16;
  }
  llvm_unreachable("unknown training precision");
}

void setTrainingPrecision(pb::Training &t, DType precision) {
  switch (precision) {
  case DType::BF16:
    return t.set_precision(pb::Training::BF16);
  case DType::F16:
    return t.set_precision(pb::Training::FP16);
  case DType::F32:
    return t.set_precision(pb::Training::F32);
  default:
    llvm_unreachable("a training precision is f32, bf16 or f16");
  }
}

} // namespace strata
