//===- PrecisionFlag.h - --precision f32|bf16|fp16 ------------------------===//
//
// The training precision flag of compile, train and verify: it overrides
// the spec's training.precision (docs/mixed-precision.md). `strata
// estimate` has its own --precision (the number format of the hardware
// model), so this one is registered per verb, not in LayoutFlags.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Types.h"
#include "proto/model_spec.pb.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

struct PrecisionFlag {
  explicit PrecisionFlag(llvm::cl::SubCommand &cmd);

  /// Checks the flag and, when given, writes it into the spec's
  /// training.precision.
  llvm::Error apply(pb::ModelSpec &spec) const;
  /// Checks the flag and, when given, writes its dtype into `precision`.
  llvm::Error apply(DType &precision) const;

  llvm::cl::opt<std::string> value;
};

} // namespace strata
