//===- NormsTest.cpp - LayerNorm / RMSNorm vs naive loops and FD ----------===//
#include "runtime/kernels/Norms.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

constexpr int64_t N = 5, C = 7;
constexpr double kEps = 1e-5;

std::vector<double> layerNormRef(const std::vector<double> &x,
                                 const std::vector<double> &w,
                                 const std::vector<double> *b) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c)
      mean += x[n * C + c] / C;
    for (int64_t c = 0; c < C; ++c)
      var += (x[n * C + c] - mean) * (x[n * C + c] - mean) / C; // biased
    for (int64_t c = 0; c < C; ++c)
      y[n * C + c] = (x[n * C + c] - mean) / std::sqrt(var + kEps) * w[c] +
                     (b ? (*b)[c] : 0);
  }
  return y;
}

std::vector<double> rmsNormRef(const std::vector<double> &x,
                               const std::vector<double> &w) {
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n) {
    double ms = 0;
    for (int64_t c = 0; c < C; ++c)
      ms += x[n * C + c] * x[n * C + c] / C;
    for (int64_t c = 0; c < C; ++c)
      y[n * C + c] = x[n * C + c] / std::sqrt(ms + kEps) * w[c];
  }
  return y;
}

TEST(LayerNorm, ForwardMatchesNaive) {
  Rng rng;
  std::vector<double> x = rng.normal(N * C, 2.0), w = rng.normal(C),
                      b = rng.normal(C);
  for (bool bias : {true, false}) {
    std::vector<double> ref = layerNormRef(x, w, bias ? &b : nullptr),
                        y(x.size());
    layerNormFwd(x.data(), w.data(), bias ? b.data() : nullptr, y.data(), N, C,
                 kEps);
    EXPECT_TRUE(allClose("layerNorm f64", y, ref, 1e-13, 1e-13));
    std::vector<float> xf = cast<float>(x), wf = cast<float>(w),
                       bf = cast<float>(b), yf(x.size());
    layerNormFwd(xf.data(), wf.data(), bias ? bf.data() : nullptr, yf.data(), N,
                 C, kEps);
    EXPECT_TRUE(allClose("layerNorm f32", yf, ref, 2e-6, 2e-6));
  }
}

TEST(LayerNorm, BackwardFiniteDifference) {
  Rng rng;
  std::vector<double> x = rng.normal(N * C, 2.0), w = rng.normal(C),
                      b = rng.normal(C);
  std::vector<double> r = rng.normal(N * C), y(N * C);
  std::vector<double> dx(N * C), dw(C, 123.0),
      db(C, 123.0); // garbage: overwritten
  layerNormBwd(r.data(), x.data(), w.data(), dx.data(), dw.data(), db.data(), N,
               C, kEps);
  auto loss = [&] {
    layerNormFwd(x.data(), w.data(), b.data(), y.data(), N, C, kEps);
    return dot(r, y);
  };
  std::vector<int64_t> xs = {N, C};
  EXPECT_TRUE(gradCheck("layerNorm dx", x, dx, loss, 1e-6, xs));
  EXPECT_TRUE(gradCheck("layerNorm dw", w, dw, loss));
  EXPECT_TRUE(gradCheck("layerNorm db", b, db, loss));
  // Bias-free variant: same dx, dw; db untouched when null.
  std::vector<double> dx2(N * C), dw2(C);
  layerNormBwd(r.data(), x.data(), w.data(), dx2.data(), dw2.data(),
               static_cast<double *>(nullptr), N, C, kEps);
  EXPECT_EQ(dx, dx2);
  EXPECT_EQ(dw, dw2);
}

TEST(RmsNorm, ForwardMatchesNaive) {
  Rng rng;
  std::vector<double> x = rng.normal(N * C, 2.0), w = rng.normal(C);
  std::vector<double> ref = rmsNormRef(x, w), y(x.size());
  rmsNormFwd(x.data(), w.data(), y.data(), N, C, kEps);
  EXPECT_TRUE(allClose("rmsNorm f64", y, ref, 1e-13, 1e-13));
  std::vector<float> xf = cast<float>(x), wf = cast<float>(w), yf(x.size());
  rmsNormFwd(xf.data(), wf.data(), yf.data(), N, C, kEps);
  EXPECT_TRUE(allClose("rmsNorm f32", yf, ref, 2e-6, 2e-6));
}

TEST(RmsNorm, BackwardFiniteDifference) {
  Rng rng;
  std::vector<double> x = rng.normal(N * C, 2.0), w = rng.normal(C);
  std::vector<double> r = rng.normal(N * C), y(N * C), dx(N * C), dw(C, 5.0);
  rmsNormBwd(r.data(), x.data(), w.data(), dx.data(), dw.data(), N, C, kEps);
  auto loss = [&] {
    rmsNormFwd(x.data(), w.data(), y.data(), N, C, kEps);
    return dot(r, y);
  };
  std::vector<int64_t> xs = {N, C};
  EXPECT_TRUE(gradCheck("rmsNorm dx", x, dx, loss, 1e-6, xs));
  EXPECT_TRUE(gradCheck("rmsNorm dw", w, dw, loss));
}

} // namespace
