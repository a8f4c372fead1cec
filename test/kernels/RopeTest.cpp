//===- RopeTest.cpp - Rotary embedding vs the direct formula and FD
//--------===//
#include "runtime/kernels/Rope.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

constexpr int64_t B = 2, S = 5, H = 3, D = 8;
constexpr double kTheta = 10000.0;

/// docs/models.md, written out per element: f_i = theta^(-2i/D), angle s*f_i.
std::vector<double> ropeRef(const std::vector<double> &x, int64_t posOffset) {
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < D / 2; ++i) {
          const double *xr = &x[((b * S + s) * H + h) * D];
          double *yr = &y[((b * S + s) * H + h) * D];
          double a = double(s + posOffset) * std::pow(kTheta, -2.0 * i / D);
          yr[i] = xr[i] * std::cos(a) - xr[i + D / 2] * std::sin(a);
          yr[i + D / 2] = xr[i + D / 2] * std::cos(a) + xr[i] * std::sin(a);
        }
  return y;
}

TEST(Rope, ForwardMatchesFormula) {
  Rng rng;
  std::vector<double> x = rng.normal(B * S * H * D);
  std::vector<int64_t> shape = {B, S, H, D};
  for (int64_t off : {0, 37}) {
    std::vector<double> ref = ropeRef(x, off), y(x.size());
    ropeFwd(x.data(), y.data(), B, S, H, D, kTheta, off);
    EXPECT_TRUE(allClose("rope f64 offset " + std::to_string(off), y, ref,
                         1e-13, 1e-13, shape));
    std::vector<float> xf = cast<float>(x), yf(x.size());
    ropeFwd(xf.data(), yf.data(), B, S, H, D, kTheta, off);
    EXPECT_TRUE(allClose("rope f32", yf, ref, 1e-6, 1e-6, shape));
    // In place.
    ropeFwd(xf.data(), xf.data(), B, S, H, D, kTheta, off);
    EXPECT_EQ(xf, yf);
  }
}

TEST(Rope, PositionOffsetMatchesSliceOfFullSequence) {
  // A sequence shard [2, 5) of a length-5 sequence rotated with offset 2
  // equals positions 2..4 of the full rotation (batch 1).
  Rng rng;
  std::vector<double> x = rng.normal(S * H * D), full(x.size());
  ropeFwd(x.data(), full.data(), 1, S, H, D, kTheta, 0);
  std::vector<double> shard(3 * H * D);
  ropeFwd(x.data() + 2 * H * D, shard.data(), 1, 3, H, D, kTheta, 2);
  std::vector<double> expect(full.begin() + 2 * H * D, full.end());
  EXPECT_TRUE(allClose("rope shard", shard, expect, 0, 0));
}

TEST(Rope, BackwardFiniteDifferenceAndInverse) {
  Rng rng;
  std::vector<double> x = rng.normal(B * S * H * D), r = rng.normal(x.size());
  std::vector<double> y(x.size()), dx(x.size());
  ropeBwd(r.data(), dx.data(), B, S, H, D, kTheta, 3);
  auto loss = [&] {
    ropeFwd(x.data(), y.data(), B, S, H, D, kTheta, 3);
    return dot(r, y);
  };
  std::vector<int64_t> shape = {B, S, H, D};
  EXPECT_TRUE(gradCheck("rope dx", x, dx, loss, 1e-6, shape));
  // Orthogonal: bwd(fwd(x)) == x.
  std::vector<double> back(x.size());
  ropeFwd(x.data(), y.data(), B, S, H, D, kTheta, 3);
  ropeBwd(y.data(), back.data(), B, S, H, D, kTheta, 3);
  EXPECT_TRUE(allClose("rope inverse", back, x, 1e-14, 1e-13, shape));
}

// Llama-3.1 scaling, transformers' _compute_llama3_parameters written out
// here from its published definition: wavelength w = 2 pi / f; w <
// L / high keeps f, w > L / low gives f / factor, otherwise the blend
// (1 - a) f / factor + a f with a = (L / w - low) / (high - low).
constexpr int64_t kD16 = 16;
const RopeScaling kLlama3{8.0, 1.0, 4.0, 64};

std::vector<double> llama3Ref(double theta) {
  std::vector<double> out;
  for (int64_t i = 0; i < kD16 / 2; ++i) {
    double f = 1.0 / std::pow(theta, double(2 * i) / double(kD16));
    double w = 2 * M_PI / f, L = 64, lo = 1, hi = 4, factor = 8;
    bool low = w > L / lo, high = w < L / hi;
    double a = (L / w - lo) / (hi - lo);
    out.push_back(high ? f : low ? f / factor : (1 - a) * f / factor + a * f);
  }
  return out;
}

TEST(Rope, Llama3FrequenciesMatchTheFormula) {
  std::vector<double> got = ropeInvFreq(kD16, kTheta, kLlama3);
  std::vector<double> want = llama3Ref(kTheta);
  EXPECT_TRUE(allClose("llama3 inv_freq", got, want, 1e-15, 0));
  // With D = 16, theta 1e4 and L = 64 the table has all three regimes:
  // f_0 kept (w 6.3 < 16), f_1 and f_2 blended (w 20 and 63), f_3.. / 8.
  std::vector<double> plain = ropeInvFreq(kD16, kTheta);
  EXPECT_EQ(got[0], plain[0]);
  for (int i : {1, 2}) {
    EXPECT_LT(got[i], plain[i]);
    EXPECT_GT(got[i], plain[i] / 8);
  }
  for (int i = 3; i < kD16 / 2; ++i)
    EXPECT_DOUBLE_EQ(got[i], plain[i] / 8);
}

TEST(Rope, UnscaledTableIsThePlainPower) {
  // The unscaled path computes exactly theta^(-2i/D), as before scaling
  // existed (bitwise: the same expression).
  std::vector<double> got = ropeInvFreq(kD16, kTheta);
  for (int64_t i = 0; i < kD16 / 2; ++i)
    EXPECT_EQ(got[i], std::pow(kTheta, -2.0 * double(i) / double(kD16)));
}

TEST(Rope, Llama3ForwardAndFiniteDifferenceGradient) {
  constexpr int64_t S2 = 40; // positions up to 40 + 3: large angles
  Rng rng;
  std::vector<double> x = rng.normal(B * S2 * H * kD16), y(x.size());
  std::vector<double> f = llama3Ref(kTheta), ref(x.size());
  for (int64_t r = 0; r < B * S2 * H; ++r) {
    double p = double((r / H) % S2 + 3);
    for (int64_t i = 0; i < kD16 / 2; ++i) {
      const double *xr = &x[r * kD16];
      double a = p * f[i];
      ref[r * kD16 + i] = xr[i] * std::cos(a) - xr[i + kD16 / 2] * std::sin(a);
      ref[r * kD16 + i + kD16 / 2] =
          xr[i + kD16 / 2] * std::cos(a) + xr[i] * std::sin(a);
    }
  }
  std::vector<int64_t> shape = {B, S2, H, kD16};
  ropeFwd(x.data(), y.data(), B, S2, H, kD16, kTheta, 3, kLlama3);
  EXPECT_TRUE(allClose("rope llama3 f64", y, ref, 1e-13, 1e-13, shape));
  std::vector<double> r = rng.normal(x.size()), dx(x.size());
  ropeBwd(r.data(), dx.data(), B, S2, H, kD16, kTheta, 3, kLlama3);
  auto loss = [&] {
    ropeFwd(x.data(), y.data(), B, S2, H, kD16, kTheta, 3, kLlama3);
    return dot(r, y);
  };
  EXPECT_TRUE(gradCheck("rope llama3 dx", x, dx, loss, 1e-6, shape));
}

} // namespace
