//===- GradAccumulationFusion.h - Weight-gradient GEMMs with beta = 1 -----===//
//
// `grad-accumulation-fusion` (Megatron-LM's gradient_accumulation_fusion):
// a matmul whose product is used only by an `add {accumulate}` into a
// gradient buffer becomes one matmul with that buffer as its third operand,
//
//   %p = matmul(%x, %dy) {transpose_a=true}
//   %grad.w = add(%grad.w.acc, %p) {accumulate=true, bwd=true}
// ->
//   %grad.w = matmul(%x, %dy, %grad.w.acc) {transpose_a=true}
//
// A 16-bit product cast to f32 before the add (mixed precision's fp32
// main_grad) folds with the cast: matmul(bf16, bf16, f32) accumulates in
// f32, as Megatron's wgrad GEMM does, and is never rounded to 16 bits.
// Both devices run the result as a GEMM with beta = 1 into the buffer the
// runtime binds to %grad.w.acc and %grad.w: the product never takes
// workspace and is never read back. The matmul keeps its place, so the
// accumulator must exist by then (a graph input, as the pipeline pass makes
// it); the result keeps the add's name and sharding. Runs on stage programs,
// after fusion (the add is never fused: FusionGroups.cpp) and before the
// memory plan.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include <memory>

namespace strata {

/// Folds every gradient accumulation into its matmul (see above); returns
/// whether anything changed.
bool fuseGradAccumulation(Graph &g);

/// The `grad-accumulation-fusion` pass.
std::unique_ptr<Pass> createGradAccumulationFusionPass();

} // namespace strata
