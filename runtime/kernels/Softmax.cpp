//===- Softmax.cpp - Softmax and cross-entropy
//------------------------------===//
#include "runtime/kernels/Softmax.h"

#include "runtime/kernels/FastMath.h"
#include "runtime/kernels/Parallel.h"

#include <cmath>
#include <limits>
#include <vector>

namespace strata::kernels {
namespace {

int64_t rowGrain(int64_t C) {
  return std::max<int64_t>(1, 8192 / std::max<int64_t>(C, 1));
}

template <typename T> T rowMax(const T *row, int64_t C) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t c = 0; c < C; ++c)
    m = row[c] > m ? row[c] : m;
  return m;
}

/// sum(exp(row - m)): the exponentials in T (kexp: within a few ulp of
/// libm's, and vectorized), the sum in double.
template <typename T> double sumExp(const T *row, int64_t C, T m) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < C; ++c)
    sum += kexp(row[c] - m);
  return sum;
}

/// log(sum(exp(row))) computed as max + log(sum(exp(row - max))).
template <typename T> double logSumExp(const T *row, int64_t C) {
  T m = rowMax(row, C);
  return double(m) + std::log(sumExp(row, C, m));
}

bool validLabel(int32_t label, int64_t V) { return label >= 0 && label < V; }

int64_t countValid(const int32_t *labels, int64_t N, int64_t V) {
  int64_t n = 0;
  for (int64_t i = 0; i < N; ++i)
    n += validLabel(labels[i], V);
  return n;
}

} // namespace

template <typename T> void softmaxFwd(const T *x, T *y, int64_t N, int64_t C) {
  // x is (N, C), y is (N, C)
  parallelFor(0, N, rowGrain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *xr = x + n * C;
      T *yr = y + n * C;
      T m = rowMax(xr, C);
      double sum = 0;
      for (int64_t c = 0; c < C; ++c) {
        T e = std::exp(xr[c] - m);
        yr[c] = e;
        sum += e;
      }
      T inv = static_cast<T>(1.0 / sum);
      for (int64_t c = 0; c < C; ++c)
        yr[c] *= inv;
    }
  });
}

template <typename T>
void softmaxBwd(const T *dy, const T *y, T *dx, int64_t N, int64_t C) {
  parallelFor(0, N, rowGrain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *dyr = dy + n * C, *yr = y + n * C;
      T *dxr = dx + n * C;
      double dot = 0;
      for (int64_t c = 0; c < C; ++c)
        dot += double(dyr[c]) * yr[c];
      T d = static_cast<T>(dot);
      for (int64_t c = 0; c < C; ++c)
        dxr[c] = yr[c] * (dyr[c] - d);
    }
  });
}

template <typename T>
T crossEntropyFwd(const T *logits, const int32_t *labels, int64_t N,
                  int64_t V) {
  // logits is (N, V), labels is (N)
  std::vector<double> rowLoss(N, 0.0);
  parallelFor(0, N, rowGrain(V), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      if (!validLabel(labels[n], V))
        continue;
      const T *row = logits + n * V;
      rowLoss[n] = logSumExp(row, V) - double(row[labels[n]]);
    }
  });
  int64_t valid = countValid(labels, N, V);
  if (valid == 0)
    return T(0);
  double sum = 0; // Serial, in row order: deterministic.
  for (double l : rowLoss)
    sum += l;
  return static_cast<T>(sum / valid);
}

template <typename T>
void crossEntropyBwd(T dloss, const T *logits, const int32_t *labels,
                     T *dlogits, int64_t N, int64_t V) {
  int64_t valid = countValid(labels, N, V);
  double g = valid ? double(dloss) / valid : 0.0;
  parallelFor(0, N, rowGrain(V), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *row = logits + n * V;
      T *drow = dlogits + n * V;
      int32_t label = labels[n];
      if (!validLabel(label, V)) {
        std::fill(drow, drow + V, T(0));
        continue;
      }
      // lse = m + log(sum), applied as (row[c] - m) - log(sum): with logits
      // ~1e4, rounding lse itself to T would cost ~1e-3 absolute in the
      // exponent; the split keeps the rounding relative to O(1) terms.
      T m = rowMax(row, V);
      double sum = sumExp(row, V, m);
      T logSum = static_cast<T>(std::log(sum)), gT = static_cast<T>(g);
      // Read before the loop: dlogits may alias logits.
      double pLabel = std::exp(double(row[label] - m) - std::log(sum));
#pragma omp simd
      for (int64_t c = 0; c < V; ++c)
        drow[c] = gT * kexp((row[c] - m) - logSum);
      drow[label] = static_cast<T>(g * (pLabel - 1.0));
    }
  });
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void softmaxFwd<T>(const T *, T *, int64_t, int64_t);               \
  template void softmaxBwd<T>(const T *, const T *, T *, int64_t, int64_t);    \
  template T crossEntropyFwd<T>(const T *, const int32_t *, int64_t, int64_t); \
  template void crossEntropyBwd<T>(T, const T *, const int32_t *, T *,         \
                                   int64_t, int64_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
