//===- Rope.cpp - Rotary position embedding ---------------------------------===//
#include "runtime/kernels/Rope.h"

#include "runtime/kernels/Check.h"
#include "runtime/kernels/Parallel.h"

#include <cmath>
#include <vector>

namespace strata::kernels {
namespace {

/// sign = +1 rotates by +angle (forward), -1 by -angle (inverse).
template <typename T>
void rope(const T *x, T *y, int64_t B, int64_t S, int64_t H, int64_t D,
          double theta, int64_t posOffset, double sign, const char *kernel) {
  STRATA_KCHECK(D % 2 == 0, kernel, "head dim D must be even");
  int64_t half = D / 2;
  // cos/sin table, (S, D/2).
  std::vector<T> cosT(S * half), sinT(S * half);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < half; ++i) {
      double f = std::pow(theta, -2.0 * double(i) / double(D));
      double a = double(s + posOffset) * f;
      cosT[s * half + i] = static_cast<T>(std::cos(a));
      sinT[s * half + i] = static_cast<T>(sign * std::sin(a));
    }
  // Rows of (D) in parallel; row r is position (r / H) % S.
  parallelFor(0, B * S * H, std::max<int64_t>(1, 8192 / std::max<int64_t>(D, 1)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t r = lo; r < hi; ++r) {
                  int64_t s = (r / H) % S;
                  const T *c = &cosT[s * half], *sn = &sinT[s * half];
                  const T *xr = x + r * D;
                  T *yr = y + r * D;
                  for (int64_t i = 0; i < half; ++i) {
                    T x1 = xr[i], x2 = xr[i + half];
                    yr[i] = x1 * c[i] - x2 * sn[i];
                    yr[i + half] = x2 * c[i] + x1 * sn[i];
                  }
                }
              });
}

} // namespace

template <typename T>
void ropeFwd(const T *x, T *y, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset) {
  rope(x, y, B, S, H, D, theta, posOffset, 1.0, "ropeFwd");
}

template <typename T>
void ropeBwd(const T *dy, T *dx, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset) {
  rope(dy, dx, B, S, H, D, theta, posOffset, -1.0, "ropeBwd");
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void ropeFwd<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t, \
                           double, int64_t);                                   \
  template void ropeBwd<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t, \
                           double, int64_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
