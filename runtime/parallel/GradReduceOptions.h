//===- GradReduceOptions.h - How gradients are reduced over dp -------------===//
//
// The trainer's options for the data-parallel gradient reduction
// (runtime/parallel/GradReducer.h) and ZeRO-1's parameter gathers
// (runtime/parallel/ParamGatherer.h): `--dp-bucket-mb`,
// `--overlap-grad-reduce` and `--overlap-param-gather` of train and verify.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Types.h"

#include <cstdint>

namespace strata {

struct GradReduceOptions {
  /// Gradient bytes per bucket: Megatron's bucket_size, 40M f32 elements.
  int64_t bucketBytes = int64_t(40'000'000) * 4;
  /// Issue each bucket during the backward, once its gradients are final
  /// (Megatron's overlap_grad_reduce); else all after the backward.
  bool overlap = true;
  /// The dtype gradients travel in over dp: F32 (Megatron's
  /// accumulate_allreduce_grads_in_fp32), or BF16 / F16 cast around the
  /// collective (runtime/parallel/GradReduceDtype.h).
  DType dtype = DType::F32;
  /// With ZeRO-1, all-gather the updated parameters in buckets (of
  /// bucketBytes) overlapping the next forward (Megatron's
  /// overlap_param_gather, runtime/parallel/ParamGatherer.h); else right
  /// after the optimizer.
  bool overlapParamGather = true;
};

} // namespace strata
