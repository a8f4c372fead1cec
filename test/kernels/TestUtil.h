//===- TestUtil.h - Shared helpers for the kernel tests
//--------------------===//
//
// Seeded random inputs, an allclose that reports the worst element and where
// it is, and a central-difference gradient checker run in double.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace strata::kernels::test {

/// Deterministic random source (fixed default seed so failures reproduce).
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed = 0x5eed) : gen(seed) {}

  std::vector<double> normal(size_t n, double stddev = 1.0) {
    std::normal_distribution<double> d(0.0, stddev);
    std::vector<double> v(n);
    for (double &x : v)
      x = d(gen);
    return v;
  }
  std::vector<double> uniform(size_t n, double lo, double hi) {
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (double &x : v)
      x = d(gen);
    return v;
  }
  std::vector<int32_t> ints(size_t n, int32_t lo, int32_t hi) { // [lo, hi]
    std::uniform_int_distribution<int32_t> d(lo, hi);
    std::vector<int32_t> v(n);
    for (int32_t &x : v)
      x = d(gen);
    return v;
  }
};

template <typename T> std::vector<T> cast(const std::vector<double> &v) {
  return std::vector<T>(v.begin(), v.end());
}

inline double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

/// Flat index -> "[i, j, k]" for messages (plain "[i]" without a shape).
inline std::string indexString(size_t flat, std::span<const int64_t> shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = static_cast<int64_t>(flat) % shape[d];
    flat /= shape[d];
  }
  std::ostringstream os;
  os << "[";
  if (shape.empty())
    os << flat;
  for (size_t d = 0; d < idx.size(); ++d)
    os << (d ? ", " : "") << idx[d];
  os << "]";
  return os.str();
}

/// |actual - expected| <= atol + rtol * |expected| for every element; on
/// failure names the worst element (largest excess over its tolerance).
template <typename A>
::testing::AssertionResult
allClose(const std::string &what, const std::vector<A> &actual,
         const std::vector<double> &expected, double atol, double rtol,
         std::span<const int64_t> shape = {}) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << what << ": size " << actual.size()
                                         << " != expected " << expected.size();
  size_t worst = 0, bad = 0;
  double worstExcess = -INFINITY;
  for (size_t i = 0; i < actual.size(); ++i) {
    double a = static_cast<double>(actual[i]), e = expected[i];
    double excess = std::abs(a - e) - (atol + rtol * std::abs(e));
    if (std::isnan(a) != std::isnan(e))
      excess = INFINITY;
    else if (std::isnan(a))
      excess = -INFINITY; // both NaN: equal
    bad += excess > 0;
    if (excess > worstExcess) {
      worstExcess = excess;
      worst = i;
    }
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << "/" << actual.size()
         << " elements off; worst at " << indexString(worst, shape)
         << ": actual " << static_cast<double>(actual[worst]) << ", expected "
         << expected[worst] << " (|diff| "
         << std::abs(static_cast<double>(actual[worst]) - expected[worst])
         << ", atol " << atol << ", rtol " << rtol << ")";
}

/// Central-difference check of an analytic gradient, in double.
///
/// `loss` must read `x` (by reference) and return the scalar L; `analytic`
/// is the kernel's dL/dx. Every element is perturbed by h = 1e-6 * max(1,|x|).
///
/// Tolerance: |fd - analytic| <= tol * max(1, |analytic|), tol = 1e-6 by
/// default. The central difference's truncation error is h^2 |L'''| / 6 ~
/// 1e-12 for the O(1) derivatives these smooth kernels have, and rounding
/// adds ~ 1e-16 |L| / h ~ 1e-10 |L|; the tests keep |L| <= ~100, so the
/// error budget is <= ~1e-8 and 1e-6 leaves 100x margin, while a wrong
/// formula (a dropped term, a missing scale) is off by >= 1e-3.
inline ::testing::AssertionResult
gradCheck(const std::string &what, std::vector<double> &x,
          const std::vector<double> &analytic,
          const std::function<double()> &loss, double tol = 1e-6,
          std::span<const int64_t> shape = {}) {
  if (x.size() != analytic.size())
    return ::testing::AssertionFailure() << what << ": grad size mismatch";
  size_t worst = 0, bad = 0;
  double worstErr = -1, worstFd = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double x0 = x[i];
    double h = 1e-6 * std::max(1.0, std::abs(x0));
    x[i] = x0 + h;
    double hp = x[i] - x0; // exactly representable step
    double lp = loss();
    x[i] = x0 - h;
    double hm = x0 - x[i];
    double lm = loss();
    x[i] = x0;
    double fd = (lp - lm) / (hp + hm);
    double err =
        std::abs(fd - analytic[i]) / std::max(1.0, std::abs(analytic[i]));
    bad += !(err <= tol);
    if (!(err <= worstErr)) {
      worstErr = err;
      worst = i;
      worstFd = fd;
    }
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << "/" << x.size()
         << " gradient elements off; worst at " << indexString(worst, shape)
         << ": analytic " << analytic[worst] << ", finite difference "
         << worstFd << " (scaled error " << worstErr << " > tol " << tol << ")";
}

} // namespace strata::kernels::test
