//===- GradReduceDtype.h - The dtype of the data-parallel gradient reduction
//
// strata reduces gradients over dp in fp32 by default, as Megatron-LM with
// `--accumulate-allreduce-grads-in-fp32` (Megatron Core's DDP config
// `grad_reduce_in_fp32=True`). `--grad-reduce-dtype bf16|fp16` reduces
// them in 16 bits instead (Megatron without that flag: its bf16 / fp16
// main_grad buffers are all-reduced as they are; PyTorch FSDP's
// MixedPrecision(reduce_dtype=...)): half the bytes on the wire, at the
// cost of one rounding of each rank's contribution and one of the sum.
//
// The gradient buffers stay fp32 (the microbatches still accumulate in
// fp32, the optimizer still reads fp32): a 16-bit reduction is three nodes
// of the bucket's graph instead of one collective,
//
//   cast(fp32 gradients) -> 16-bit staging buffer   (round to nearest even)
//   all_reduce / reduce_scatter of the staging buffer, in place
//   cast(16-bit result) -> the fp32 result bytes the optimizer reads
//
// launched on the reduction stream like the fp32 collective.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <vector>

namespace strata {

/// One node of a bucket's reduction graph and the bytes it reads and writes.
struct ReductionLaunch {
  int32_t node;
  const void *in;
  void *out;
};

/// Appends to `g` the dp reduction `op` (AllReduce, or ReduceScatter with
/// attrs' `dim`) of the fp32 gradient of type `type` at `in` into the fp32
/// `result` type at `out`, carried in `dtype`: F32 is the collective alone;
/// BF16 / F16 cast through `staging` (type.numElements() 16-bit elements).
/// `input` / `scope` / `resultName` name the graph's input, the nodes'
/// scope and the collective's result.
std::vector<ReductionLaunch>
addDpReduction(Graph &g, OpKind op, const Attrs &attrs, const TensorType &type,
               const TensorType &result, DType dtype, llvm::StringRef input,
               llvm::StringRef scope, llvm::StringRef resultName,
               const void *in, void *out, void *staging);

} // namespace strata
