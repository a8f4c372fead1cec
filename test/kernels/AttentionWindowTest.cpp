//===- AttentionWindowTest.cpp - Sliding-window attention (Mistral) -------===//
//
// attentionFwd / attentionBwd with a window W > 0: query i sees keys
// [i - W + 1, i]. The forward is compared with a naive f64 softmax over
// exactly those keys; the backward with central finite differences of
// L = sum(out * r) in f64; f32 against f64 (relative 1e-5: f32 rounding of
// sums over at most W keys of D products). Shapes have S not a multiple of
// the 16-key block and windows below, across and above one block.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace strata::kernels {
namespace {

struct Case {
  AttentionDims dims;
  int64_t window;
};

std::vector<double> randoms(int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0, 1);
  std::vector<double> v(n);
  for (double &x : v)
    x = d(g);
  return v;
}

/// out[b,i,h,:] = sum_j softmax_j(scale q_i . k_j) v_j over the window.
std::vector<double> naive(const std::vector<double> &q,
                          const std::vector<double> &k,
                          const std::vector<double> &v, const Case &c,
                          double scale) {
  auto [B, S, Hq, Hkv, D] = c.dims;
  std::vector<double> out(B * S * Hq * D);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < S; ++i) {
        int64_t g = h / (Hq / Hkv), lo = std::max<int64_t>(0, i - c.window + 1);
        std::vector<double> s(i + 1 - lo);
        double m = -INFINITY, sum = 0;
        for (int64_t j = lo; j <= i; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += q[((b * S + i) * Hq + h) * D + d] *
                   k[((b * S + j) * Hkv + g) * D + d];
          m = std::max(m, s[j - lo] = scale * dot);
        }
        for (double &x : s)
          sum += x = std::exp(x - m);
        for (int64_t j = lo; j <= i; ++j)
          for (int64_t d = 0; d < D; ++d)
            out[((b * S + i) * Hq + h) * D + d] +=
                s[j - lo] / sum * v[((b * S + j) * Hkv + g) * D + d];
      }
  return out;
}

class AttentionWindow : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionWindow, ForwardMatchesNaiveAndFloatMatchesDouble) {
  const Case &c = GetParam();
  auto [B, S, Hq, Hkv, D] = c.dims;
  double scale = 1 / std::sqrt(double(D));
  auto q = randoms(B * S * Hq * D, 1), k = randoms(B * S * Hkv * D, 2),
       v = randoms(B * S * Hkv * D, 3);
  std::vector<double> out(q.size());
  attentionFwd(q.data(), k.data(), v.data(), out.data(), c.dims, true, scale,
               c.window);
  auto want = naive(q, k, v, c, scale);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-12) << i;
  std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()),
      vf(v.begin(), v.end()), of(q.size());
  attentionFwd(qf.data(), kf.data(), vf.data(), of.data(), c.dims, true, scale,
               c.window);
  for (size_t i = 0; i < of.size(); ++i)
    ASSERT_NEAR(of[i], want[i], 1e-5) << i;
}

TEST_P(AttentionWindow, BackwardMatchesFiniteDifferences) {
  const Case &c = GetParam();
  auto [B, S, Hq, Hkv, D] = c.dims;
  double scale = 1 / std::sqrt(double(D));
  std::vector<std::vector<double>> x = {randoms(B * S * Hq * D, 4),
                                        randoms(B * S * Hkv * D, 5),
                                        randoms(B * S * Hkv * D, 6)};
  auto r = randoms(B * S * Hq * D, 7); // dL/dout
  std::vector<std::vector<double>> grad = {std::vector<double>(x[0].size()),
                                           std::vector<double>(x[1].size()),
                                           std::vector<double>(x[2].size())};
  attentionBwd(r.data(), x[0].data(), x[1].data(), x[2].data(), grad[0].data(),
               grad[1].data(), grad[2].data(), c.dims, true, scale, c.window);
  auto loss = [&] {
    std::vector<double> out(r.size());
    attentionFwd(x[0].data(), x[1].data(), x[2].data(), out.data(), c.dims,
                 true, scale, c.window);
    double l = 0;
    for (size_t i = 0; i < r.size(); ++i)
      l += out[i] * r[i];
    return l;
  };
  const double h = 1e-6;
  for (int t = 0; t < 3; ++t)
    for (size_t i = 0; i < x[t].size();
         i += 7) { // a spread subset keeps it fast
      double keep = x[t][i];
      x[t][i] = keep + h;
      double up = loss();
      x[t][i] = keep - h;
      double down = loss();
      x[t][i] = keep;
      EXPECT_NEAR(grad[t][i], (up - down) / (2 * h), 1e-6)
          << "operand " << t << " at " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionWindow,
    ::testing::Values(Case{{1, 37, 4, 2, 8},
                           5}, // GQA, window inside a key block
                      Case{{2, 40, 2, 2, 16}, 17}, // window just over one block
                      Case{{1, 35, 3, 1, 8}, 33},  // MQA, window almost S
                      Case{{1, 20, 2, 1, 4}, 64})); // window > S: plain causal

} // namespace
} // namespace strata::kernels
