//===- AdamWTest.cpp - AdamW vs a hand-computed two-step reference
//---------===//
#include "runtime/kernels/AdamW.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

// lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, p0 = 1,
// g1 = 0.5, g2 = -0.25. By hand:
// t=1: p = 1 * (1 - 0.001) = 0.999; m = 0.05; v = 0.001 * 0.25 = 2.5e-4;
//      step = 0.1 / (1 - 0.9) = 1; denom = sqrt(2.5e-4) / sqrt(1e-3) + 1e-8
//      = 0.5 + 1e-8; p = 0.999 - 0.05 / 0.50000001 = 0.899000001999999960
// t=2: p = 0.899000002 * 0.999 = 0.898101001998; m = 0.045 - 0.025 = 0.02;
//      v = 0.999 * 2.5e-4 + 0.001 * 0.0625 = 3.1225e-4;
//      step = 0.1 / (1 - 0.81) = 0.1 / 0.19;
//      denom = sqrt(3.1225e-4 / (1 - 0.998001)) + 1e-8
//            = sqrt(0.156203101550775...) + 1e-8 = 0.395225380...;
//      p = 0.898101001998 - (0.1 / 0.19) * 0.02 / denom = 0.871467...
// (the exact literals below were evaluated with 50-digit decimals).
constexpr double kP1 = 0.89900000199999996000;
constexpr double kP2 = 0.87146729870584616260;

TEST(AdamW, TwoStepsMatchHandComputed) {
  AdamWConfig cfg;
  cfg.lr = 0.1, cfg.beta1 = 0.9, cfg.beta2 = 0.999, cfg.eps = 1e-8,
  cfg.weightDecay = 0.01;
  std::vector<double> p = {1.0}, m = {0.0}, v = {0.0};
  std::vector<double> g1 = {0.5}, g2 = {-0.25};
  adamwStep(p.data(), g1.data(), m.data(), v.data(), 1, 1, cfg);
  EXPECT_NEAR(p[0], kP1, 1e-15);
  EXPECT_NEAR(m[0], 0.05, 1e-16);
  EXPECT_NEAR(v[0], 2.5e-4, 1e-18);
  adamwStep(p.data(), g2.data(), m.data(), v.data(), 1, 2, cfg);
  EXPECT_NEAR(p[0], kP2, 1e-15);
  EXPECT_NEAR(m[0], 0.02, 1e-16);
  EXPECT_NEAR(v[0], 3.1225e-4, 1e-18);
}

TEST(AdamW, VectorMatchesScalarFormulaInFloat) {
  // Many elements (several parallel chunks), no decay, float storage vs a
  // double evaluation of the docs/models.md formula.
  Rng rng;
  const int64_t n = 70000;
  AdamWConfig cfg;
  cfg.lr = 3e-3, cfg.weightDecay = 0.0;
  std::vector<double> p = rng.normal(n), g1 = rng.normal(n), g2 = rng.normal(n);
  std::vector<float> pf = cast<float>(p), mf(n, 0.f), vf(n, 0.f);
  std::vector<float> g1f = cast<float>(g1), g2f = cast<float>(g2);
  adamwStep(pf.data(), g1f.data(), mf.data(), vf.data(), n, 1, cfg);
  adamwStep(pf.data(), g2f.data(), mf.data(), vf.data(), n, 2, cfg);
  std::vector<double> ref(n);
  for (int64_t i = 0; i < n; ++i) {
    double pp = double(float(p[i])), m = 0, v = 0;
    double gs[2] = {double(g1f[i]), double(g2f[i])};
    for (int t = 1; t <= 2; ++t) {
      m = 0.9 * m + 0.1 * gs[t - 1];
      v = 0.999 * v + 0.001 * gs[t - 1] * gs[t - 1];
      pp -= (cfg.lr / (1 - std::pow(0.9, t))) * m /
            (std::sqrt(v) / std::sqrt(1 - std::pow(0.999, t)) + cfg.eps);
    }
    ref[i] = pp;
  }
  // Update size ~ lr = 3e-3 per step, computed in float: error ~ 1e-7 * |p|.
  EXPECT_TRUE(allClose("adamw f32", pf, ref, 1e-6, 1e-6));
}

} // namespace
