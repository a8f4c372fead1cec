//===- MatMul.cpp - Batched GEMM on libxsmm and OpenBLAS ------------------===//
//
// Float GEMMs run libxsmm's JIT kernels where it has one (alpha 1, beta 0 or
// 1, B not transposed: libxsmm transposes only its second operand): they
// read the operands in place, with no packing copies and no zeroing pass
// over C, 12-15% faster than OpenBLAS's sgemm on gpt_tiny's shapes on Zen 4
// (768x128x128 ... 768x128x512, one thread). Everything else is OpenBLAS.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/MatMul.h"

#include "runtime/kernels/Check.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <cblas.h>
#include <libxsmm.h>
#include <type_traits>
#include <vector>

namespace strata::kernels {
namespace {

/// Whether libxsmm's JIT kernels take these scalars (with B untransposed).
bool xsmmTakes(double alpha, double beta) {
  return alpha == 1.0 && (beta == 0.0 || beta == 1.0);
}

void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          double alpha, const float *a, int lda, const float *b, int ldb,
          double beta, float *c, int ldc) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B is
  // libxsmm's first operand, A (transposed when ta) its second.
  if (tb == CblasNoTrans && xsmmTakes(alpha, beta)) {
    float one = 1.0f, fbeta = static_cast<float>(beta);
    int flags =
        ta == CblasTrans ? LIBXSMM_GEMM_FLAG_TRANS_B : LIBXSMM_GEMM_FLAG_NONE;
    if (libxsmm_smmfunction kernel = libxsmm_smmdispatch(
            n, m, k, &ldb, &lda, &ldc, &one, &fbeta, &flags, nullptr)) {
      kernel(b, a, c);
      return;
    }
  }
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda,
              b, ldb, static_cast<float>(beta), c, ldc);
}
void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
          double alpha, const double *a, int lda, const double *b, int ldb,
          double beta, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

/// One GEMM whose output is cut into tiles of whole 32-row (or column)
/// panels, each tile a single-threaded BLAS call (OpenBLAS's own threads
/// are off; Parallel.h), the tiles spread over parallelFor's threads. The
/// tiling is a function of the shape alone: OpenBLAS picks its kernel by
/// the call's shape (small-matrix and direct paths below a few MFLOP, each
/// summing in its own order), so tiles cut by the thread count would round
/// differently at different thread counts. Cutting rows or columns of C
/// never splits a dot product.
template <typename T>
void gemmTiled(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
               int64_t k, double alpha, const T *a, int lda, const T *b,
               int ldb, double beta, T *c, int ldc) {
  // A power-of-two number of tiles (even over 2 threads), each of >= 2
  // panels (64 rows: narrower tiles re-pack the other operand too often,
  // +12% at 32) and >= 4 MFLOP; beyond 2 tiles only while each keeps >= 32
  // MFLOP, as every tile re-packs the operand it shares (gpt_tiny's GEMMs,
  // 25-100 MFLOP, take one call per thread on 2 threads; big GEMMs spread
  // over many cores).
  constexpr int64_t kAlign = 32, kMinFlops = int64_t(4) << 20,
                    kManyFlops = int64_t(32) << 20;
  bool byRows = m >= n;
  int64_t extent = byRows ? m : n;
  int64_t units = (extent + kAlign - 1) / kAlign;
  double flops = 2.0 * double(m) * double(n) * double(k);
  int64_t tiles = 1;
  while (tiles * 2 * 2 <= units && (tiles * 2) * kMinFlops <= flops &&
         (tiles * 2 <= 2 || (tiles * 2) * kManyFlops <= flops))
    tiles *= 2;
  int64_t tileUnits = (units + tiles - 1) / tiles;
  // libxsmm takes B only untransposed (gemm() above): a float B^T is copied
  // transposed once ([K, N], a few hundred KB at most here) for all tiles.
  std::vector<T> bT;
  if (std::is_same_v<T, float> && tb == CblasTrans && xsmmTakes(alpha, beta)) {
    bT.resize(size_t(k) * size_t(n));
    constexpr int64_t kBlock = 16; // 16 x 16 blocks: whole cache lines
    parallelFor(0, (n + kBlock - 1) / kBlock, 4, [&](int64_t lo, int64_t hi) {
      for (int64_t j0 = lo * kBlock; j0 < std::min(n, hi * kBlock);
           j0 += kBlock)
        for (int64_t p0 = 0; p0 < k; p0 += kBlock)
          for (int64_t j = j0; j < std::min(n, j0 + kBlock); ++j)
            for (int64_t p = p0; p < std::min(k, p0 + kBlock); ++p)
              bT[p * n + j] = b[j * ldb + p];
    });
    b = bT.data(), ldb = int(n), tb = CblasNoTrans;
  }
  parallelFor(0, tiles, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      int64_t i0 = t * tileUnits * kAlign;
      int64_t i1 = std::min(extent, (t + 1) * tileUnits * kAlign);
      if (i0 >= i1)
        continue;
      int64_t len = i1 - i0;
      if (byRows) {
        const T *ai = ta == CblasTrans ? a + i0 : a + i0 * lda;
        gemm(ta, tb, int(len), int(n), int(k), alpha, ai, lda, b, ldb, beta,
             c + i0 * ldc, ldc);
      } else {
        const T *bj = tb == CblasTrans ? b + i0 * ldb : b + i0;
        gemm(ta, tb, int(m), int(len), int(k), alpha, a, lda, bj, ldb, beta,
             c + i0, ldc);
      }
    }
  });
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
        C[b * sC + i] =
            g.beta == 0.0 ? T(0) : static_cast<T>(g.beta) * C[b * sC + i];
    return;
  }
  bool foldBatch = g.batch > 1 && sB == 0 && !g.transA && sA == g.M * g.K &&
                   sC == g.M * g.N && g.batch * g.M <= INT32_MAX;
  if (foldBatch) {
    gemmTiled(ta, tb, g.batch * g.M, g.N, g.K, g.alpha, A, lda, B, ldb, g.beta,
              C, ldc);
    return;
  }
  if (g.batch == 1) {
    gemmTiled(ta, tb, g.M, g.N, g.K, g.alpha, A, lda, B, ldb, g.beta, C, ldc);
    return;
  }
  // Many small GEMMs (attention's per-head products): whole GEMMs per thread.
  int64_t flops = std::max<int64_t>(1, 2 * g.M * g.N * g.K);
  parallelFor(0, g.batch, std::max<int64_t>(1, (int64_t(1) << 21) / flops),
              [&](int64_t lo, int64_t hi) {
                for (int64_t b = lo; b < hi; ++b)
                  gemm(ta, tb, static_cast<int>(g.M), static_cast<int>(g.N),
                       static_cast<int>(g.K), g.alpha, A + b * sA, lda,
                       B + b * sB, ldb, g.beta, C + b * sC, ldc);
              });
}

template void matmul<float>(const float *, const float *, float *,
                            const GemmArgs &);
template void matmul<double>(const double *, const double *, double *,
                             const GemmArgs &);

} // namespace strata::kernels
