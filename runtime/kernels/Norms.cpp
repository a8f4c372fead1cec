//===- Norms.cpp - LayerNorm and RMSNorm
//------------------------------------===//
//
// Forward and dx are parallel over rows. dw / db are reductions over rows; to
// keep them deterministic (independent of the thread count) and race-free they
// are computed in a second pass parallel over channel blocks, each block
// walking all rows in order with the per-row statistics saved by pass one.
// Row sums are `omp simd` reductions (vector lanes, then the lanes in a fixed
// order): deterministic, and within double rounding of the sequential sums.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Norms.h"

#include "runtime/kernels/Parallel.h"

#include <cmath>
#include <vector>

namespace strata::kernels {
namespace {

int64_t rowGrain(int64_t C) {
  return std::max<int64_t>(1, 8192 / std::max<int64_t>(C, 1));
}

/// Channels per block in the dw/db pass: a few cache lines of each row.
constexpr int64_t kChannelBlock = 64;

struct RowStats {
  double mean, rstd;
};

template <typename T>
RowStats layerNormStats(const T *row, int64_t C, double eps) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < C; ++c)
    sum += row[c];
  double mean = sum / C;
  double var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t c = 0; c < C; ++c) {
    double d = row[c] - mean;
    var += d * d;
  }
  return {mean, 1.0 / std::sqrt(var / C + eps)};
}

template <typename T> double rmsRstd(const T *row, int64_t C, double eps) {
  double ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int64_t c = 0; c < C; ++c)
    ss += double(row[c]) * row[c];
  return 1.0 / std::sqrt(ss / C + eps);
}

/// dw[c] (and db[c]) = sum_n dy[n,c] * xhat[n,c] (and dy[n,c]), where
/// xhat = (x - mean) * rstd; blocks of channels in parallel.
template <typename T>
void paramGrads(const T *dy, const T *x, const std::vector<RowStats> &stats,
                T *dw, T *db, int64_t N, int64_t C) {
  int64_t blocks = (C + kChannelBlock - 1) / kChannelBlock;
  parallelFor(0, blocks, 1, [&](int64_t lo, int64_t hi) {
    double accW[kChannelBlock], accB[kChannelBlock];
    for (int64_t blk = lo; blk < hi; ++blk) {
      int64_t c0 = blk * kChannelBlock, c1 = std::min(C, c0 + kChannelBlock);
      std::fill(accW, accW + (c1 - c0), 0.0);
      std::fill(accB, accB + (c1 - c0), 0.0);
      for (int64_t n = 0; n < N; ++n) {
        const T *dyr = dy + n * C, *xr = x + n * C;
        double mean = stats[n].mean, rstd = stats[n].rstd;
        for (int64_t c = c0; c < c1; ++c) {
          accW[c - c0] += double(dyr[c]) * ((xr[c] - mean) * rstd);
          accB[c - c0] += dyr[c];
        }
      }
      for (int64_t c = c0; c < c1; ++c) {
        dw[c] = static_cast<T>(accW[c - c0]);
        if (db)
          db[c] = static_cast<T>(accB[c - c0]);
      }
    }
  });
}

} // namespace

template <typename T>
void layerNormFwd(const T *x, const T *w, const T *b, T *y, int64_t N,
                  int64_t C, double eps) {
  // x is (N, C), y is (N, C)
  parallelFor(0, N, rowGrain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *xr = x + n * C;
      T *yr = y + n * C;
      RowStats s = layerNormStats(xr, C, eps);
      T mean = static_cast<T>(s.mean), rstd = static_cast<T>(s.rstd);
      for (int64_t c = 0; c < C; ++c)
        yr[c] = (xr[c] - mean) * rstd * w[c] + (b ? b[c] : T(0));
    }
  });
}

template <typename T>
void layerNormBwd(const T *dy, const T *x, const T *w, T *dx, T *dw, T *db,
                  int64_t N, int64_t C, double eps) {
  // With g = dy * w and xhat = (x - mean) * rstd:
  // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
  std::vector<RowStats> stats(N);
  parallelFor(0, N, rowGrain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *xr = x + n * C, *dyr = dy + n * C;
      T *dxr = dx + n * C;
      RowStats s = stats[n] = layerNormStats(xr, C, eps);
      double sumG = 0, sumGX = 0;
#pragma omp simd reduction(+ : sumG, sumGX)
      for (int64_t c = 0; c < C; ++c) {
        double g = double(dyr[c]) * w[c];
        sumG += g;
        sumGX += g * ((xr[c] - s.mean) * s.rstd);
      }
      double meanG = sumG / C, meanGX = sumGX / C;
      for (int64_t c = 0; c < C; ++c) {
        double xhat = (xr[c] - s.mean) * s.rstd;
        double g = double(dyr[c]) * w[c];
        dxr[c] = static_cast<T>(s.rstd * (g - meanG - xhat * meanGX));
      }
    }
  });
  paramGrads(dy, x, stats, dw, db, N, C);
}

template <typename T>
void rmsNormFwd(const T *x, const T *w, T *y, int64_t N, int64_t C,
                double eps) {
  // x is (N, C), y is (N, C)
  parallelFor(0, N, rowGrain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *xr = x + n * C;
      T *yr = y + n * C;
      T rstd = static_cast<T>(rmsRstd(xr, C, eps));
      for (int64_t c = 0; c < C; ++c)
        yr[c] = xr[c] * rstd * w[c];
    }
  });
}

template <typename T>
void rmsNormBwd(const T *dy, const T *x, const T *w, T *dx, T *dw, int64_t N,
                int64_t C, double eps) {
  // With g = dy * w and r = rstd: dx = r * (g - x * r^2 * mean(g * x)).
  std::vector<RowStats> stats(N);
  parallelFor(0, N, rowGrain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const T *xr = x + n * C, *dyr = dy + n * C;
      T *dxr = dx + n * C;
      double r = rmsRstd(xr, C, eps);
      stats[n] = {0.0, r}; // xhat = x * r for the dw pass.
      double sumGX = 0;
#pragma omp simd reduction(+ : sumGX)
      for (int64_t c = 0; c < C; ++c)
        sumGX += double(dyr[c]) * w[c] * xr[c];
      double k = r * r * r * sumGX / C;
      for (int64_t c = 0; c < C; ++c)
        dxr[c] = static_cast<T>(r * double(dyr[c]) * w[c] - k * xr[c]);
    }
  });
  paramGrads(dy, x, stats, dw, static_cast<T *>(nullptr), N, C);
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void layerNormFwd<T>(const T *, const T *, const T *, T *, int64_t, \
                                int64_t, double);                              \
  template void layerNormBwd<T>(const T *, const T *, const T *, T *, T *,     \
                                T *, int64_t, int64_t, double);                \
  template void rmsNormFwd<T>(const T *, const T *, T *, int64_t, int64_t,     \
                              double);                                         \
  template void rmsNormBwd<T>(const T *, const T *, const T *, T *, T *,       \
                              int64_t, int64_t, double);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
