//===- ReferenceGemm.h - Interpret mode's cuBLASLt ------------------------===//
//
// What Driver::gemm does in interpret mode: the GEMM a cuBLASLt descriptor
// describes (cuda::Gemm: layouts, transposes, leading dimensions, batch
// strides, alpha and beta, 16-bit inputs with f32 compute) by OpenBLAS on
// the host, then its epilogue (bias, GELU with its auxiliary output, GELU's
// gradient, the bias gradient) with the CPU device's own kernels
// (runtime/kernels/Elementwise.h), so the CPU checks what cuBLASLt is asked
// to compute. 16-bit matrices are widened to f32 and a 16-bit C is rounded
// once (to nearest even), after the epilogue.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/Driver.h"

namespace strata::cuda {

/// The descriptor is one cuBLASLt accepts (sizes, leading dimensions, type
/// pairs, the epilogue's operands); the memory it reads and writes is
/// checked by the caller.
llvm::Error checkGemmDescriptor(const Gemm &g);

/// Bytes from the start of a matrix of `g` to the end of its last element
/// (over all batches): which = 'A', 'B', 'C' or 'X' (aux); 0 for none.
int64_t gemmSpan(const Gemm &g, char which);

/// Runs `g` on host memory (device pointers are host addresses).
void runReferenceGemm(const Gemm &g);

} // namespace strata::cuda
