//===- MatmulGemm.h - IR matmuls as cuBLASLt GEMMs ------------------------===//
//
// How the CUDA device maps matmuls onto Driver::gemm (cuBLASLt):
//  - matmulGemm: ir/Ops.def's row-major matmul (a[..., M, K] x b[..., K, N]
//    or [K, N], each maybe transposed) as a column-major GEMM:
//    C^T = op(b)^T op(a)^T, so b is cuBLASLt's A and a its B. 16-bit
//    operands keep their type (f32 compute).
//  - matchEpilogue: a fused body that is only a matmul and what cuBLASLt's
//    epilogues compute (the fusion pass put them there):
//      matmul + add(bias[N])                        -> BIAS
//      matmul + add(bias[N]) + gelu(tanh)           -> GELU_AUX_BIAS (the add
//                                                      is the aux output)
//      matmul + gelu_grad(tanh, pre)                -> DGELU (pre is aux)
//      matmul + gelu_grad(tanh, pre) + reduce_sum   -> DGELU_BGRAD (the sum
//        over every dim but the last                   is the bias gradient)
//    The activation's rows fold into one GEMM (n = rows) so a bias gradient
//    sums them all; GELU's aux matrix needs N % 8 == 0 (cuBLASLt's rule).
//  - a matmul with an accumulator operand (grad-accumulation-fusion) is
//    the GEMM with beta = 1; CudaDevice sets it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/cuda/Driver.h"


#include <optional>

namespace strata::cuda {

/// The GEMM of matmul `mm` of `g` computing into `c`.
Gemm matmulGemm(const Graph &g, const Node &mm, const void *a, const void *b,
                void *c);

/// A fused body a GEMM with an epilogue computes: where its operands come
/// from (body input / result indices; -1: none).
struct EpiloguePlan {
  Epilogue epilogue = Epilogue::None;
  int32_t inputA = -1, inputB = -1; // the matmul's a and b
  int32_t out = -1;                 // result written as the GEMM's C
  int32_t biasInput = -1;           // BIAS, GELU_AUX_BIAS
  int32_t biasResult = -1;          // DGELU_BGRAD's bias gradient
  int32_t auxInput = -1;            // DGELU*: GELU's input
  int32_t auxResult = -1;           // GELU_AUX_BIAS: GELU's input
};

/// `body`'s plan as one GEMM with an epilogue, if it is one of the forms
/// above.
std::optional<EpiloguePlan> matchEpilogue(const Graph &body);

/// The GEMM of `plan` for a fused node with these operand and result
/// buffers (in the body's input / output order).
Gemm epilogueGemm(const Graph &body, const EpiloguePlan &plan,
                  llvm::ArrayRef<const void *> operands,
                  llvm::ArrayRef<void *> results);

} // namespace strata::cuda
