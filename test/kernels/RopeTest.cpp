//===- RopeTest.cpp - Rotary embedding vs the direct formula and FD --------===//
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
    EXPECT_TRUE(allClose("rope f64 offset " + std::to_string(off), y, ref, 1e-13, 1e-13, shape));
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

} // namespace
