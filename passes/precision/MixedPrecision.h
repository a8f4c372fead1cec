//===- MixedPrecision.h - 16-bit compute with fp32 master state -*- C++ -*-===//
//
// mixed-precision{dtype=bf16|fp16, grad-reduce=f32}
//
// Megatron-LM's mixed precision (`--bf16` / `--fp16`) on the microbatch
// graph. It runs after autodiff and before megatron-seeds / spmd
// (passes/pipeline/ParallelCompile.cpp):
//
//   - after autodiff, because it types the forward and the backward with one
//     policy and gives the backward its own 16-bit copies of the parameters
//     (a cast in the backward region), so a forward copy of a weight is never
//     stashed for the backward;
//   - before spmd, so the partitioner shards the casts like any elementwise
//     op and inserts the tensor-parallel collectives on the 16-bit values
//     (Megatron's tp all-reduces are 16-bit), while the gradients leave the
//     microbatch graph in fp32: the data-parallel reduction in the optimizer
//     program (all_reduce, or the distributed optimizer's reduce_scatter)
//     runs in fp32, Megatron's default (accumulate_allreduce_grads_in_fp32);
//   - before recompute and memory, so stash and workspace bytes are 16-bit.
//
// The policy, node by node:
//   - every parameter stays an fp32 input (the master weight the optimizer
//     program updates, with fp32 AdamW moments); each scope that reads it
//     reads a 16-bit copy `cast(p)` made just before its first use, one in
//     the forward and one in the backward region;
//   - every float op computes in 16-bit (its float operands are cast to the
//     16-bit dtype where they are not), except: cross_entropy and its
//     gradient (Megatron casts the logits to fp32 for the loss), ops whose
//     float results are all scalars (the loss and its scale), the `add`
//     trees that sum a tied parameter's gradient contributions (each
//     contribution is cast to fp32 first, like Megatron's fp32 main_grad),
//     and `cast` / `iota` nodes, which keep their types;
//   - the graph's float outputs keep their dtype and name: a 16-bit
//     parameter gradient is cast to fp32 (the main_grad the runtime
//     accumulates microbatches into).
// Kernels read 16-bit values and compute in fp32: matmuls accumulate in
// fp32, softmax / layer_norm / rms_norm keep their statistics in fp32, and
// a result is rounded to 16 bits once, when it is stored (runtime/cpu).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include <memory>
#include <optional>

namespace strata {

/// A training precision as the dtype the plan computes in: "f32" (no
/// pass), "bf16", or "fp16" (also "f16"); nullopt for anything else.
std::optional<DType> parseTrainingPrecision(llvm::StringRef name);
/// "f32", "bf16" or "fp16", as the flag and the spec write it.
llvm::StringRef trainingPrecisionName(DType precision);

/// Applies the policy above with 16-bit dtype `dtype` (bf16 or f16). Fails,
/// leaving `g` unchanged, if a parameter is not f32 or the graph already
/// holds 16-bit values.
llvm::Error applyMixedPrecision(Graph &g, DType dtype);

std::unique_ptr<Pass> createMixedPrecisionPass(DType dtype);

} // namespace strata
