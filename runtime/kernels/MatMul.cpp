//===- MatMul.cpp - Batched GEMM on OpenBLAS -------------------------------===//
#include "runtime/kernels/MatMul.h"

#include "runtime/kernels/Check.h"

#include <algorithm>
#include <cblas.h>

namespace strata::kernels {
namespace {

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          double alpha, const float *a, int lda, const float *b, int ldb,
          double beta, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda,
              b, ldb, static_cast<float>(beta), c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          double alpha, const double *a, int lda, const double *b, int ldb,
          double beta, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

} // namespace

template <typename T>
void matmul(const T *A, const T *B, T *C, const GemmArgs &g) {
  const char *kernel = "matmul";
  STRATA_KCHECK(g.batch >= 0 && g.M >= 0 && g.N >= 0 && g.K >= 0, kernel,
                "negative size");
  STRATA_KCHECK(std::max({g.M, g.N, g.K}) <= INT32_MAX, kernel,
                "matrix dim exceeds BLAS's 32-bit int");
  int64_t sA = g.strideA < 0 ? g.M * g.K : g.strideA;
  int64_t sB = g.strideB < 0 ? g.K * g.N : g.strideB;
  int64_t sC = g.strideC < 0 ? g.M * g.N : g.strideC;
  if (g.batch == 0 || g.M == 0 || g.N == 0)
    return;
  auto ta = g.transA ? CblasTrans : CblasNoTrans;
  auto tb = g.transB ? CblasTrans : CblasNoTrans;
  // Leading dims of the row-major stored matrices.
  int lda = static_cast<int>(g.transA ? g.M : g.K);
  int ldb = static_cast<int>(g.transB ? g.K : g.N);
  int ldc = static_cast<int>(g.N);
  if (g.K == 0) {
    // BLAS may skip the beta scaling for K == 0 on some builds; do it here.
    for (int64_t b = 0; b < g.batch; ++b)
      for (int64_t i = 0; i < g.M * g.N; ++i)
        C[b * sC + i] = g.beta == 0.0 ? T(0) : static_cast<T>(g.beta) * C[b * sC + i];
    return;
  }
  bool foldBatch = g.batch > 1 && sB == 0 && !g.transA && sA == g.M * g.K &&
                   sC == g.M * g.N && g.batch * g.M <= INT32_MAX;
  if (foldBatch) {
    gemm(ta, tb, static_cast<int>(g.batch * g.M), static_cast<int>(g.N),
         static_cast<int>(g.K), g.alpha, A, lda, B, ldb, g.beta, C, ldc);
    return;
  }
  for (int64_t b = 0; b < g.batch; ++b)
    gemm(ta, tb, static_cast<int>(g.M), static_cast<int>(g.N),
         static_cast<int>(g.K), g.alpha, A + b * sA, lda, B + b * sB, ldb,
         g.beta, C + b * sC, ldc);
}

template void matmul<float>(const float *, const float *, float *,
                            const GemmArgs &);
template void matmul<double>(const double *, const double *, double *,
                             const GemmArgs &);

} // namespace strata::kernels
