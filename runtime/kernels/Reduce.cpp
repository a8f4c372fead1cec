//===- Reduce.cpp - Reductions over an arbitrary set of axes ---------------===//
//
// Adjacent dims with the same kept/reduced status are merged first. The
// common patterns [K1, R, K2] (row sums, bias-grad column sums, middle-axis
// sums) run directly; anything else (e.g. reduce axes {0, 2} of a rank-3
// tensor) is transposed to [kept..., reduced...] and row-reduced.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Reduce.h"

#include "runtime/kernels/Layout.h"
#include "runtime/kernels/Shape.h"

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

// y[k1, k2] = reduce_r x[k1, r, k2].
template <typename T>
void reduce3(Acc acc, const T *x, int64_t k1, int64_t r, int64_t k2, T *y,
             int64_t count) {
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
  // k2 outputs, so every read of x is contiguous.
  int64_t grain = std::max<int64_t>(64, 16384 / std::max<int64_t>(r, 1));
  parallelFor(0, k1 * k2, grain, [&](int64_t lo, int64_t hi) {
    std::vector<double> a;
    for (int64_t start = lo; start < hi;) {
      int64_t i = start / k2, c0 = start % k2;
      int64_t c1 = std::min(k2, c0 + (hi - start));
      a.assign(c1 - c0, acc.init());
      for (int64_t j = 0; j < r; ++j) {
        const T *row = x + (i * r + j) * k2;
        for (int64_t c = c0; c < c1; ++c)
          a[c - c0] = acc.step(a[c - c0], row[c]);
      }
      for (int64_t c = c0; c < c1; ++c)
        y[i * k2 + c] = static_cast<T>(acc.finish(a[c - c0], count));
      start += c1 - c0;
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
