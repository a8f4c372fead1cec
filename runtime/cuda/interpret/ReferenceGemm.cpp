//===- ReferenceGemm.cpp - Interpret mode's cuBLASLt ----------------------===//
#include "runtime/cuda/interpret/ReferenceGemm.h"

#include "runtime/kernels/Elementwise.h"
#include "runtime/kernels/Float16.h"

#include <cblas.h>

#include <algorithm>
#include <vector>

namespace strata::cuda {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool is16(DType t) { return t == DType::BF16 || t == DType::F16; }

bool hasBias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::GeluAuxBias ||
         e == Epilogue::DGeluBGrad;
}
bool hasAux(Epilogue e) { return e != Epilogue::None && e != Epilogue::Bias; }

/// Rows and columns of matrix `which` as stored (before its transpose).
std::pair<int64_t, int64_t> storedShape(const Gemm &g, char which) {
  switch (which) {
  case 'A':
    return {g.transA ? g.k : g.m, g.transA ? g.m : g.k};
  case 'B':
    return {g.transB ? g.n : g.k, g.transB ? g.k : g.n};
  default:
    return {g.m, g.n};
  }
}

/// `count` elements of type `t` at `p` as f32.
std::vector<float> widen(DType t, const void *p, int64_t count) {
  std::vector<float> w(count);
  auto *h = static_cast<const uint16_t *>(p);
  if (t == DType::BF16)
    kernels::bf16ToFloat(h, w.data(), count);
  else if (t == DType::F16)
    kernels::halfToFloat(h, w.data(), count);
  else
    std::copy_n(static_cast<const float *>(p), count, w.data());
  return w;
}

void narrow(DType t, const float *x, void *p, int64_t count) {
  auto *h = static_cast<uint16_t *>(p);
  if (t == DType::BF16)
    kernels::floatToBf16(x, h, count);
  else if (t == DType::F16)
    kernels::floatToHalf(x, h, count);
  else
    std::copy_n(x, count, static_cast<float *>(p));
}

/// C (T: float or double, as the GEMM wrote it) through the epilogue.
template <typename T> void epilogue(const Gemm &g, T *c, const T *bias) {
  T *aux = reinterpret_cast<T *>(g.aux);
  std::vector<double> sums(g.epilogue == Epilogue::DGeluBGrad ? g.m : 0);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t j = 0; j < g.n; ++j) {
      T *col = c + b * g.strideC + j * g.ldc;
      T *auxCol = aux ? aux + b * g.strideAux + j * g.ldAux : nullptr;
      switch (g.epilogue) {
      case Epilogue::None:
        break;
      case Epilogue::Bias:
        for (int64_t i = 0; i < g.m; ++i)
          col[i] += bias[i];
        break;
      case Epilogue::GeluAuxBias:
        for (int64_t i = 0; i < g.m; ++i)
          auxCol[i] = col[i] + bias[i];
        kernels::unaryFwd(kernels::UnaryOp::GeluTanh, auxCol, col, g.m);
        break;
      case Epilogue::DGelu:
      case Epilogue::DGeluBGrad: // sums: one batch (checkGemmDescriptor)
        kernels::geluGrad(col, auxCol, col, g.m);
        for (size_t i = 0; i < sums.size(); ++i)
          sums[i] += double(col[i]);
        break;
      }
    }
  T *grad = reinterpret_cast<T *>(g.bias);
  for (size_t i = 0; i < sums.size(); ++i)
    grad[i] = T(sums[i]);
}

} // namespace

int64_t gemmSpan(const Gemm &g, char which) {
  int64_t size = dtypeBytes(which == 'A' || which == 'B' ? g.ab : g.c);
  auto [rows, cols] = storedShape(g, which);
  int64_t ld = which == 'A'   ? g.lda
               : which == 'B' ? g.ldb
               : which == 'C' ? g.ldc
                              : g.ldAux;
  int64_t stride = which == 'A'   ? g.strideA
                   : which == 'B' ? g.strideB
                   : which == 'C' ? g.strideC
                                  : g.strideAux;
  if (which == 'X' && !hasAux(g.epilogue))
    return 0;
  return ((g.batch - 1) * stride + (cols - 1) * ld + rows) * size;
}

llvm::Error checkGemmDescriptor(const Gemm &g) {
  auto [rowsA, colsA] = storedShape(g, 'A');
  auto [rowsB, colsB] = storedShape(g, 'B');
  if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0 ||
      g.lda < std::max<int64_t>(1, rowsA) ||
      g.ldb < std::max<int64_t>(1, rowsB) ||
      g.ldc < std::max<int64_t>(1, g.m))
    return err("gemm: invalid descriptor (m " + llvm::Twine(g.m) + ", n " +
               llvm::Twine(g.n) + ", k " + llvm::Twine(g.k) + ", lda " +
               llvm::Twine(g.lda) + ", ldb " + llvm::Twine(g.ldb) + ", ldc " +
               llvm::Twine(g.ldc) + ")");
  bool pairOk = g.ab == g.c ? g.ab != DType::I32 && g.ab != DType::I64 &&
                                  g.ab != DType::I1
                            : is16(g.ab) && g.c == DType::F32;
  if (!pairOk)
    return err("gemm: no cuBLASLt GEMM takes " + dtypeName(g.ab) +
               " inputs to a " + dtypeName(g.c) + " result");
  if (g.epilogue == Epilogue::None)
    return llvm::Error::success();
  if (g.c != DType::F32 && g.c != DType::F64)
    return err("gemm: the epilogues run on f32 or f64 results here");
  if (g.epilogue == Epilogue::DGeluBGrad && g.batch != 1)
    return err("gemm: a bias gradient sums one matrix (cuBLASLt writes one "
               "per batch); fold the batch into n");
  if (hasBias(g.epilogue) && !g.bias)
    return err("gemm: the epilogue needs a bias vector");
  if (hasAux(g.epilogue) &&
      (!g.aux || g.ldAux < g.m || g.ldAux % 8 || g.strideAux % 8))
    return err("gemm: the epilogue needs an aux matrix whose leading "
               "dimension and batch stride are multiples of 8 (cuBLASLt's "
               "rule), got " +
               llvm::Twine(g.ldAux) + " and " + llvm::Twine(g.strideAux));
  return llvm::Error::success();
}

void runReferenceGemm(const Gemm &g) {
  auto ta = g.transA ? CblasTrans : CblasNoTrans;
  auto tb = g.transB ? CblasTrans : CblasNoTrans;
  if (g.c == DType::F64) {
    for (int64_t i = 0; i < g.batch; ++i)
      cblas_dgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, g.alpha,
                  reinterpret_cast<double *>(g.A) + i * g.strideA, g.lda,
                  reinterpret_cast<double *>(g.B) + i * g.strideB, g.ldb,
                  g.beta, reinterpret_cast<double *>(g.C) + i * g.strideC,
                  g.ldc);
    epilogue(g, reinterpret_cast<double *>(g.C),
             reinterpret_cast<const double *>(g.bias));
    return;
  }
  // f32 compute: 16-bit matrices through f32 copies of their spans.
  int64_t sizeAB = dtypeBytes(g.ab), sizeC = dtypeBytes(g.c);
  std::vector<float> a, b, c;
  const float *pa = reinterpret_cast<const float *>(g.A),
              *pb = reinterpret_cast<const float *>(g.B);
  float *pc = reinterpret_cast<float *>(g.C);
  if (is16(g.ab)) {
    a = widen(g.ab, pa, gemmSpan(g, 'A') / sizeAB);
    b = widen(g.ab, pb, gemmSpan(g, 'B') / sizeAB);
    pa = a.data();
    pb = b.data();
  }
  if (is16(g.c)) {
    c = widen(g.c, pc, gemmSpan(g, 'C') / sizeC);
    pc = c.data();
  }
  for (int64_t i = 0; i < g.batch; ++i)
    cblas_sgemm(CblasColMajor, ta, tb, g.m, g.n, g.k, float(g.alpha),
                pa + i * g.strideA, g.lda, pb + i * g.strideB, g.ldb,
                float(g.beta), pc + i * g.strideC, g.ldc);
  epilogue(g, pc, reinterpret_cast<const float *>(g.bias));
  if (is16(g.c)) // column by column: bytes between columns stay as they are
    for (int64_t i = 0; i < g.batch; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        int64_t at = i * g.strideC + j * g.ldc;
        narrow(g.c, c.data() + at,
               reinterpret_cast<char *>(g.C) + at * sizeC, g.m);
      }
}

} // namespace strata::cuda
