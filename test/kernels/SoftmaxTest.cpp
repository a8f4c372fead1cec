//===- SoftmaxTest.cpp - Softmax and cross-entropy vs naive loops and FD
//---===//
#include "runtime/kernels/Softmax.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

constexpr int64_t N = 6, V = 9;

/// Naive log-sum-exp in long double (no max trick; inputs kept moderate).
long double lseRef(const double *row, int64_t n) {
  long double s = 0;
  for (int64_t c = 0; c < n; ++c)
    s += std::exp(static_cast<long double>(row[c]));
  return std::log(s);
}

TEST(Softmax, ForwardMatchesNaiveAndRowsSumToOne) {
  Rng rng;
  std::vector<double> x = rng.normal(N * V, 3.0), ref(N * V), y(N * V);
  for (int64_t n = 0; n < N; ++n) {
    long double lse = lseRef(&x[n * V], V);
    for (int64_t c = 0; c < V; ++c)
      ref[n * V + c] = double(std::exp(x[n * V + c] - lse));
  }
  softmaxFwd(x.data(), y.data(), N, V);
  EXPECT_TRUE(allClose("softmax f64", y, ref, 1e-15, 1e-13));
  std::vector<float> xf = cast<float>(x), yf(N * V);
  softmaxFwd(xf.data(), yf.data(), N, V);
  // float inputs with |x| ~ 10 carry 1e-6 absolute rounding -> ~1e-6 rel.
  EXPECT_TRUE(allClose("softmax f32", yf, ref, 1e-7, 3e-6));
  for (int64_t n = 0; n < N; ++n) {
    double s = 0;
    for (int64_t c = 0; c < V; ++c)
      s += yf[n * V + c];
    EXPECT_NEAR(s, 1.0, 1e-6) << "row " << n;
  }
}

TEST(Softmax, StableForHugeInputs) {
  std::vector<float> x = {1e4f, 1e4f - 1, -1e4f, 3e38f, -3e38f, 0.0f}, y(6);
  softmaxFwd(x.data(), y.data(), 2, 3);
  for (float v : y)
    EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0f, 1e-6f);
  EXPECT_NEAR(y[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(y[3], 1.0f);
}

TEST(Softmax, BackwardFiniteDifference) {
  Rng rng;
  std::vector<double> x = rng.normal(N * V, 2.0), r = rng.normal(N * V);
  std::vector<double> y(N * V), dx(N * V);
  softmaxFwd(x.data(), y.data(), N, V);
  softmaxBwd(r.data(), y.data(), dx.data(), N, V);
  auto loss = [&] {
    softmaxFwd(x.data(), y.data(), N, V);
    return dot(r, y);
  };
  std::vector<int64_t> xs = {N, V};
  EXPECT_TRUE(gradCheck("softmax dx", x, dx, loss, 1e-6, xs));
}

TEST(CrossEntropy, ForwardMatchesNaive) {
  Rng rng;
  std::vector<double> logits = rng.normal(N * V, 2.0);
  std::vector<int32_t> labels = rng.ints(N, 0, V - 1);
  long double sum = 0;
  for (int64_t n = 0; n < N; ++n)
    sum += lseRef(&logits[n * V], V) - logits[n * V + labels[n]];
  double ref = double(sum / N);
  EXPECT_NEAR(crossEntropyFwd(logits.data(), labels.data(), N, V), ref, 1e-13);
  std::vector<float> lf = cast<float>(logits);
  EXPECT_NEAR(crossEntropyFwd(lf.data(), labels.data(), N, V), ref, 2e-6);
}

TEST(CrossEntropy, LargeLogitsStayFinite) {
  // Row 0: logits 1e4 apart; row 1: all 1e4 (uniform over V = 3).
  std::vector<float> logits = {1e4f, 0.0f, -1e4f, 1e4f, 1e4f, 1e4f};
  std::vector<int32_t> labels = {1, 2};
  float loss = crossEntropyFwd(logits.data(), labels.data(), 2, 3);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, (1e4 + std::log(3.0)) / 2, 1e-2);
  std::vector<float> d(6);
  crossEntropyBwd(1.0f, logits.data(), labels.data(), d.data(), 2, 3);
  for (float v : d)
    EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(d[0], 0.5f, 1e-6f);  // p = 1 at the argmax, halved by N = 2
  EXPECT_NEAR(d[1], -0.5f, 1e-6f); // label with p = 0
  EXPECT_NEAR(d[5], (1.0f / 3 - 1) / 2, 1e-6f);
}

TEST(CrossEntropy, BackwardFiniteDifference) {
  Rng rng;
  std::vector<double> logits = rng.normal(N * V, 2.0), d(N * V);
  std::vector<int32_t> labels = rng.ints(N, 0, V - 1);
  const double dloss = 1.7;
  crossEntropyBwd(dloss, logits.data(), labels.data(), d.data(), N, V);
  auto loss = [&] {
    return dloss * crossEntropyFwd(logits.data(), labels.data(), N, V);
  };
  std::vector<int64_t> xs = {N, V};
  EXPECT_TRUE(gradCheck("crossEntropy dlogits", logits, d, loss, 1e-6, xs));
}

TEST(CrossEntropy, OutOfRangeLabelsAreIgnored) {
  Rng rng;
  std::vector<double> logits = rng.normal(N * V), d(N * V);
  std::vector<int32_t> labels = rng.ints(N, 0, V - 1);
  labels[1] = -100; // PyTorch's ignore_index
  labels[4] = int32_t(V);
  long double sum = 0;
  for (int64_t n : {0, 2, 3, 5})
    sum += lseRef(&logits[n * V], V) - logits[n * V + labels[n]];
  EXPECT_NEAR(crossEntropyFwd(logits.data(), labels.data(), N, V),
              double(sum / 4), 1e-13);
  crossEntropyBwd(1.0, logits.data(), labels.data(), d.data(), N, V);
  for (int64_t c = 0; c < V; ++c) {
    EXPECT_EQ(d[1 * V + c], 0.0);
    EXPECT_EQ(d[4 * V + c], 0.0);
  }
  auto loss = [&] {
    return crossEntropyFwd(logits.data(), labels.data(), N, V);
  };
  EXPECT_TRUE(gradCheck("crossEntropy ignored", logits, d, loss));
  std::vector<int32_t> none(N, -1);
  EXPECT_EQ(crossEntropyFwd(logits.data(), none.data(), N, V), 0.0);
}

} // namespace
