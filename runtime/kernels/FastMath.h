//===- FastMath.h - Vectorizable float exp and tanh
//------------------------===//
//
// glibc's expf/tanhf are scalar calls; in GELU and SiLU they dominated a
// training step (28% of gpt_tiny's time). These branch-free versions
// (Cephes' polynomials: Cody-Waite range reduction + degree-6 polynomial
// for exp; an odd polynomial below |x| = 0.625 and the exp form above for
// tanh) vectorize, and stay within a few ulp of the libm results (checked in
// test/kernels/FastMathTest.cpp). Only the float kernels use them; double
// kernels (finite-difference references) keep libm.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <bit>
#include <cstdint>

namespace strata::kernels {

/// e^x for float, within a few ulp over [-87.33, 88]; arguments are clamped
/// to that range (so never inf or NaN; e^88 = 1.65e38 < FLT_MAX).
inline float fastExp(float x) {
  x = x < -87.33f ? -87.33f : (x > 88.0f ? 88.0f : x);
  float kf = x * 1.44269504088896341f;
  int32_t k = int32_t(kf + (kf >= 0.0f ? 0.5f : -0.5f));
  float fk = float(k);
  float r = x - fk * 0.693359375f - fk * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  return y * std::bit_cast<float>(uint32_t(k + 127) << 23);
}

/// tanh(x) for float.
inline float fastTanh(float x) {
  float a = x < 0.0f ? -x : x;
  float z = x * x;
  float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) *
            z +
        1.33314422036e-1f) *
           z -
       3.33332819422e-1f) *
          z * x +
      x;
  float t = fastExp(2.0f * (a > 10.0f ? 10.0f : a)); // tanh(10) == 1 in float
  float large = 1.0f - 2.0f / (t + 1.0f);
  large = x < 0.0f ? -large : large;
  return a < 0.625f ? small : large;
}

/// The libm function for double, the fast one for float.
template <typename T> inline T kexp(T x);
template <> inline float kexp(float x) { return fastExp(x); }
template <> inline double kexp(double x) { return __builtin_exp(x); }
template <typename T> inline T ktanh(T x);
template <> inline float ktanh(float x) { return fastTanh(x); }
template <> inline double ktanh(double x) { return __builtin_tanh(x); }

} // namespace strata::kernels
