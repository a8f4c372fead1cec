//===- Rope.cpp - Rotary position embedding
//---------------------------------===//
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
          double theta, int64_t posOffset, const RopeScaling &scaling,
          double sign, const char *kernel) {
  STRATA_KCHECK(D % 2 == 0, kernel, "head dim D must be even");
  STRATA_KCHECK(!scaling.enabled() ||
                    (scaling.factor > 0 && scaling.lowFreqFactor > 0 &&
                     scaling.highFreqFactor > scaling.lowFreqFactor),
                kernel,
                "llama3 scaling needs factor > 0 and "
                "high_freq_factor > low_freq_factor > 0");
  int64_t half = D / 2;
  std::vector<double> freq = ropeInvFreq(D, theta, scaling);
  // cos/sin table, (S, D/2).
  std::vector<T> cosT(S * half), sinT(S * half);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < half; ++i) {
      double a = double(s + posOffset) * freq[i];
      cosT[s * half + i] = static_cast<T>(std::cos(a));
      sinT[s * half + i] = static_cast<T>(sign * std::sin(a));
    }
  // Rows of (D) in parallel; row r is position (r / H) % S.
  parallelFor(0, B * S * H,
              std::max<int64_t>(1, 8192 / std::max<int64_t>(D, 1)),
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

std::vector<double> ropeInvFreq(int64_t D, double theta,
                                const RopeScaling &scaling) {
  std::vector<double> freq(D / 2);
  for (int64_t i = 0; i < D / 2; ++i)
    freq[i] = std::pow(theta, -2.0 * double(i) / double(D));
  if (!scaling.enabled())
    return freq;
  // transformers' _compute_llama3_parameters, term for term.
  double L = double(scaling.originalMaxPositions);
  double lowWavelen = L / scaling.lowFreqFactor;
  double highWavelen = L / scaling.highFreqFactor;
  for (double &f : freq) {
    double wavelen = 2 * M_PI / f;
    if (wavelen > lowWavelen) {
      f /= scaling.factor;
    } else if (wavelen >= highWavelen) {
      double a = (L / wavelen - scaling.lowFreqFactor) /
                 (scaling.highFreqFactor - scaling.lowFreqFactor);
      f = (1 - a) * f / scaling.factor + a * f;
    }
  }
  return freq;
}

template <typename T>
void ropeFwd(const T *x, T *y, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset, const RopeScaling &scaling) {
  rope(x, y, B, S, H, D, theta, posOffset, scaling, 1.0, "ropeFwd");
}

template <typename T>
void ropeBwd(const T *dy, T *dx, int64_t B, int64_t S, int64_t H, int64_t D,
             double theta, int64_t posOffset, const RopeScaling &scaling) {
  rope(dy, dx, B, S, H, D, theta, posOffset, scaling, -1.0, "ropeBwd");
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void ropeFwd<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t, \
                           double, int64_t, const RopeScaling &);              \
  template void ropeBwd<T>(const T *, T *, int64_t, int64_t, int64_t, int64_t, \
                           double, int64_t, const RopeScaling &);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
