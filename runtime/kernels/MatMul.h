//===- MatMul.h - Batched GEMM on OpenBLAS
//---------------------------------===//
//
// C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] for b in [0, batch), with
// op(X) = X or X^T. Matrices are row-major and dense; batch strides are in
// elements, and a stride of 0 shares that operand across the batch (e.g. an
// activation batch times one weight).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// Arguments of matmul(). op(A) is (M, K), op(B) is (K, N), C is (M, N):
/// A is stored (M, K), or (K, M) when transA; B is (K, N), or (N, K) when
/// transB. Defaults describe a single dense GEMM that overwrites C.
struct GemmArgs {
  int64_t batch = 1;
  int64_t M = 0, N = 0, K = 0;
  bool transA = false, transB = false;
  int64_t strideA = -1; ///< Elements between A[b]; -1 = dense (M*K).
  int64_t strideB = -1; ///< Elements between B[b]; -1 = dense, 0 = shared.
  int64_t strideC = -1; ///< Elements between C[b]; -1 = dense (M*N).
  double alpha = 1.0;
  double beta = 0.0; ///< 0 overwrites C (C may hold garbage); 1 accumulates.
};

/// Batched GEMM via cblas_sgemm / cblas_dgemm. When B is shared, A is not
/// transposed and A and C are dense, the batch is folded into M and one GEMM
/// runs; otherwise one GEMM per batch entry. A single GEMM is cut into row or
/// column tiles across parallelFor's threads; a batch is split by entries.
template <typename T>
void matmul(const T *A, const T *B, T *C, const GemmArgs &args);

} // namespace strata::kernels
