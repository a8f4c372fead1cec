//===- LossScale.h - The backward's seed as a loss-scale input -*- C++ -*-===//
//
// loss-scale
//
// Loss scaling (Megatron-LM's fp16 training; Micikevicius et al. 2018)
// multiplies the loss by a scale S before the backward, so small 16-bit
// gradients stay normal numbers, and divides the fp32 gradients by S before
// the optimizer. d(S * loss)/d(loss) = S, so the pass needs one change: the
// seed autodiff starts the backward from, `%d.<loss> = fill() {value=1.0}`,
// becomes the f32 scalar input `%loss_scale`, bound by the runtime
// (passes/pipeline/Bindings.h: role loss_scale) to the scale of the step
// (runtime/train/LossScaler.h). Every gradient output is then S times the
// unscaled one; the trainer unscales them in fp32, checks them for inf / nan
// and skips the step when one holds any.
//
// It runs after autodiff and mixed-precision (passes/pipeline/
// ParallelCompile.cpp), before spmd: the input is a replicated scalar, read
// by the head stage's backward program only.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include <memory>

namespace strata {

/// The name of the loss-scale input the pass adds.
inline constexpr llvm::StringLiteral kLossScaleInput = "loss_scale";

/// Replaces the backward's seed of differentiated graph `g` with the input
/// %loss_scale: f32[]. Fails, leaving `g` unchanged, if `g` has no such
/// seed (not differentiated, or already scaled).
llvm::Error applyLossScale(Graph &g);

std::unique_ptr<Pass> createLossScalePass();

} // namespace strata
