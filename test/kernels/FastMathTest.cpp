//===- FastMathTest.cpp - Vectorizable exp/tanh against libm in double
//-----===//
#include "runtime/kernels/FastMath.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::kernels {
namespace {

// Sweeps x over [lo, hi] and returns the worst relative error against the
// double-precision libm value (absolute below `absFloor`, where the relative
// error of a float result is meaningless).
template <typename F, typename G>
double worstError(F fast, G exact, double lo, double hi, double absFloor,
                  double &at) {
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    float x = float(lo + (hi - lo) * i / 200000.0);
    double want = exact(double(x));
    double err =
        std::fabs(double(fast(x)) - want) / std::max(std::fabs(want), absFloor);
    if (err > worst) {
      worst = err;
      at = x;
    }
  }
  return worst;
}

// 2^-21 ~ 4.8e-7: four float ulps. libm's expf/tanhf are within one; the
// polynomial versions may lose up to a few ulps in range reduction.
constexpr double kTol = 0x1p-21;

TEST(FastMath, ExpMatchesLibm) {
  double at = 0;
  double w = worstError(
      fastExp, [](double x) { return std::exp(x); }, -87, 88, 0, at);
  EXPECT_LT(w, kTol) << "at x = " << at;
  EXPECT_EQ(fastExp(-1000.0f),
            fastExp(-87.33f)); // clamped, no NaN/denormal trap
  EXPECT_TRUE(std::isfinite(fastExp(1000.0f)));
}

TEST(FastMath, TanhMatchesLibm) {
  double at = 0;
  double w = worstError(
      fastTanh, [](double x) { return std::tanh(x); }, -12, 12, 1e-30, at);
  EXPECT_LT(w, kTol) << "at x = " << at;
  // Tiny arguments keep full relative precision (the odd polynomial branch).
  EXPECT_FLOAT_EQ(fastTanh(1e-6f), 1e-6f);
  EXPECT_EQ(fastTanh(50.0f), 1.0f);
  EXPECT_EQ(fastTanh(-50.0f), -1.0f);
}

} // namespace
} // namespace strata::kernels
