//===- Reduce.cpp - Reductions over an arbitrary set of axes
//---------------===//
//
// Adjacent dims with the same kept/reduced status are merged first. The
// common patterns [K1, R, K2] (row sums, bias-grad column sums, middle-axis
// sums) run directly; anything else (e.g. reduce axes {0, 2} of a rank-3
// tensor) is transposed to [kept..., reduced...] and row-reduced. Row sums
// add fixed blocks of fixed lanes, column sums one double per column in row
// order: neither depends on the thread count.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Reduce.h"

#include "runtime/kernels/Layout.h"
#include "runtime/kernels/Shape.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace strata::kernels {
namespace {

/// Accumulator: sums in double, max in double too (exact for float inputs).
struct Acc {
  ReduceOp op;
  double init() const {
    return op == ReduceOp::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  }
  double step(double acc, double v) const {
    if (op != ReduceOp::Max)
      return acc + v;
    if (acc != acc) // NaN sticks.
      return acc;
    return (v > acc || v != v) ? v : acc;
  }
  double finish(double acc, int64_t count) const {
    return op == ReduceOp::Mean ? acc / static_cast<double>(count) : acc;
  }
};

/// Elements per block of a row sum; a row's sum is the sum of its blocks in
/// order, so where a long row splits never depends on the thread count.
constexpr int64_t kSumBlock = 16384;
/// Independent double partial sums per block (lane j % kLanes), added in a
/// fixed tree at the end: the lanes vectorize and break the dependency chain
/// of one accumulator (a 64K-element gradient-norm sum was ~55 us of adds).
constexpr int kLanes = 16;

template <typename T> double blockSum(const T *x, int64_t n) {
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
#pragma omp simd
    for (int l = 0; l < kLanes; ++l)
      lane[l] += double(x[j + l]);
  for (int l = 0; j < n; ++j, ++l)
    lane[l] += double(x[j]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l)
      lane[l] += lane[l + w];
  return lane[0];
}

// y[k] = sum (or mean) of row k of x (k1 rows of r).
template <typename T>
void rowSums(const Acc &acc, const T *x, int64_t k1, int64_t r, T *y,
             int64_t count) {
  const int64_t blocks = std::max<int64_t>(1, (r + kSumBlock - 1) / kSumBlock);
  std::vector<double> part(k1 * blocks);
  int64_t len = std::min(r, kSumBlock);
  parallelFor(
      0, k1 * blocks, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)),
      [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) {
          int64_t i = t / blocks, j0 = t % blocks * kSumBlock;
          part[t] = blockSum(x + i * r + j0, std::min(r - j0, kSumBlock));
        }
      });
  for (int64_t i = 0; i < k1; ++i) {
    double a = 0;
    for (int64_t b = 0; b < blocks; ++b)
      a += part[i * blocks + b];
    y[i] = static_cast<T>(acc.finish(a, count));
  }
}

/// a[c] += sum_j x[j * ld + c] for c < n, j < r, in row order. Strips of
/// kStrip columns keep their sums in registers over all the rows.
constexpr int64_t kStrip = 32;
template <typename T>
void columnSums(const T *x, int64_t r, int64_t ld, int64_t n, double *a) {
  int64_t c0 = 0;
  for (; c0 + kStrip <= n; c0 += kStrip) {
    double s[kStrip];
    for (int64_t c = 0; c < kStrip; ++c)
      s[c] = a[c0 + c];
    for (int64_t j = 0; j < r; ++j)
#pragma omp simd
      for (int64_t c = 0; c < kStrip; ++c)
        s[c] += double(x[j * ld + c0 + c]);
    for (int64_t c = 0; c < kStrip; ++c)
      a[c0 + c] = s[c];
  }
  for (int64_t j = 0; j < r; ++j)
    for (int64_t c = c0; c < n; ++c)
      a[c] += double(x[j * ld + c]);
}

// y[k1, k2] = reduce_r x[k1, r, k2].
template <typename T>
void reduce3(Acc acc, const T *x, int64_t k1, int64_t r, int64_t k2, T *y,
             int64_t count) {
  bool sum = acc.op != ReduceOp::Max;
  if (k2 == 1 && sum)
    return rowSums(acc, x, k1, r, y, count);
  if (k2 == 1) {
    parallelFor(0, k1, std::max<int64_t>(1, 16384 / std::max<int64_t>(r, 1)),
                [&](int64_t lo, int64_t hi) {
                  for (int64_t i = lo; i < hi; ++i) {
                    const T *row = x + i * r;
                    double a = acc.init();
                    for (int64_t j = 0; j < r; ++j)
                      a = acc.step(a, row[j]);
                    y[i] = static_cast<T>(acc.finish(a, count));
                  }
                });
    return;
  }
  // Column reduction: walk rows in order, accumulating a contiguous run of
  // k2 outputs, so every read of x is contiguous (and sums vectorize).
  int64_t grain = std::max<int64_t>(64, 16384 / std::max<int64_t>(r, 1));
  parallelFor(0, k1 * k2, grain, [&](int64_t lo, int64_t hi) {
    std::vector<double> a;
    for (int64_t start = lo; start < hi;) {
      int64_t i = start / k2, c0 = start % k2;
      int64_t c1 = std::min(k2, c0 + (hi - start)), n = c1 - c0;
      a.assign(n, acc.init());
      double *ap = a.data();
      const T *xi = x + i * r * k2 + c0;
      if (sum)
        columnSums(xi, r, k2, n, ap);
      else
        for (int64_t j = 0; j < r; ++j)
          for (int64_t c = 0; c < n; ++c)
            ap[c] = acc.step(ap[c], xi[j * k2 + c]);
      for (int64_t c = 0; c < n; ++c)
        y[i * k2 + c0 + c] = static_cast<T>(acc.finish(ap[c], count));
      start += n;
    }
  });
}

} // namespace

template <typename T>
void reduce(ReduceOp op, const T *x, std::span<const int64_t> xShape,
            std::span<const int64_t> axes, T *y) {
  const char *kernel = "reduce";
  int rank = static_cast<int>(xShape.size());
  STRATA_KCHECK(rank <= kMaxRank, kernel, "rank exceeds 8");
  bool reduced[kMaxRank] = {};
  int64_t count = 1;
  for (int64_t a : axes) {
    STRATA_KCHECK(a >= -rank && a < rank, kernel, "axis out of range");
    int d = static_cast<int>(a < 0 ? a + rank : a);
    STRATA_KCHECK(!reduced[d], kernel, "axis listed twice");
    reduced[d] = true;
    count *= xShape[d];
  }
  // Merge adjacent dims of equal status; size-1 dims are dropped.
  std::vector<std::pair<int64_t, bool>> groups;
  for (int d = 0; d < rank; ++d) {
    if (xShape[d] == 1)
      continue;
    if (!groups.empty() && groups.back().second == reduced[d])
      groups.back().first *= xShape[d];
    else
      groups.push_back({xShape[d], reduced[d]});
  }
  Acc acc{op};
  size_t at = 0;
  int64_t k1 = 1, r = 1, k2 = 1;
  if (at < groups.size() && !groups[at].second)
    k1 = groups[at++].first;
  if (at < groups.size() && groups[at].second)
    r = groups[at++].first;
  if (at < groups.size() && !groups[at].second)
    k2 = groups[at++].first;
  if (at == groups.size())
    return reduce3(acc, x, k1, r, k2, y, count);

  // General case: move kept dims to the front, then reduce each row.
  std::vector<int64_t> perm;
  int64_t kept = 1;
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) {
      perm.push_back(d);
      kept *= xShape[d];
    }
  for (int d = 0; d < rank; ++d)
    if (reduced[d])
      perm.push_back(d);
  std::vector<T> tmp(numElements(xShape));
  transpose(x, xShape, std::span<const int64_t>(perm), tmp.data());
  reduce3(acc, tmp.data(), kept, count, int64_t(1), y, count);
}

template void reduce<float>(ReduceOp, const float *, std::span<const int64_t>,
                            std::span<const int64_t>, float *);
template void reduce<double>(ReduceOp, const double *, std::span<const int64_t>,
                             std::span<const int64_t>, double *);

} // namespace strata::kernels
