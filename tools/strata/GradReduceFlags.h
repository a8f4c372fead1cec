//===- GradReduceFlags.h - --dp-bucket-mb, --overlap-grad-reduce, ... -----===//
//
// The data-parallel gradient reduction's flags of train and verify
// (runtime/parallel/GradReducer.h, docs/multi-gpu.md): Megatron-LM's
// bucket_size (here in MiB of f32 gradients), overlap_grad_reduce and
// overlap_param_gather (ZeRO-1's gathers, runtime/parallel/ParamGatherer.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/parallel/GradReduceOptions.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

namespace strata {

struct GradReduceFlags {
  explicit GradReduceFlags(llvm::cl::SubCommand &cmd);

  /// The options the flags ask for (defaults for those not given); an
  /// error for a bucket size that is not positive.
  llvm::Expected<GradReduceOptions> options() const;

  llvm::cl::opt<double> bucketMb;
  llvm::cl::opt<bool> overlap;
  llvm::cl::opt<bool> overlapParamGather;
};

} // namespace strata
