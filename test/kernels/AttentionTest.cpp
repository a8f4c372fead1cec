//===- AttentionTest.cpp - Attention vs explicit softmax(QK^T)V and FD ----===//
#include "runtime/kernels/Attention.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

/// Explicit reference: for each (b, h) build the full score matrix
/// S = scale * Q K^T, set masked entries to -inf, softmax rows, multiply by V.
std::vector<double> attentionRef(const std::vector<double> &q,
                                 const std::vector<double> &k,
                                 const std::vector<double> &v, AttentionDims d,
                                 bool causal, double scale) {
  auto [B, S, Hq, Hkv, D] = d;
  std::vector<double> out(B * S * Hq * D);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t g = h / (Hq / Hkv);
      std::vector<std::vector<double>> P(S, std::vector<double>(S));
      for (int64_t i = 0; i < S; ++i) {
        double m = -INFINITY, z = 0;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t e = 0; e < D; ++e)
            s += q[((b * S + i) * Hq + h) * D + e] *
                 k[((b * S + j) * Hkv + g) * D + e];
          P[i][j] = (causal && j > i) ? -INFINITY : scale * s;
          m = std::max(m, P[i][j]);
        }
        for (int64_t j = 0; j < S; ++j)
          z += (P[i][j] = std::exp(P[i][j] - m));
        for (int64_t j = 0; j < S; ++j)
          P[i][j] /= z;
      }
      for (int64_t i = 0; i < S; ++i)
        for (int64_t e = 0; e < D; ++e) {
          double s = 0;
          for (int64_t j = 0; j < S; ++j)
            s += P[i][j] * v[((b * S + j) * Hkv + g) * D + e];
          out[((b * S + i) * Hq + h) * D + e] = s;
        }
    }
  return out;
}

struct Case {
  const char *name;
  AttentionDims dims;
};
const Case kCases[] = {
    {"MHA", {2, 5, 2, 2, 3}},
    {"GQA Hq=4 Hkv=2", {2, 4, 4, 2, 3}},
    {"MQA Hq=4 Hkv=1", {1, 5, 4, 1, 4}},
};

TEST(Attention, ForwardMatchesExplicitSoftmax) {
  Rng rng;
  for (const Case &c : kCases)
    for (bool causal : {true, false}) {
      auto [B, S, Hq, Hkv, D] = c.dims;
      std::vector<double> q = rng.normal(B * S * Hq * D),
                          k = rng.normal(B * S * Hkv * D),
                          v = rng.normal(B * S * Hkv * D), out(q.size());
      double scale = 1.0 / std::sqrt(double(D));
      std::vector<double> ref = attentionRef(q, k, v, c.dims, causal, scale);
      std::vector<int64_t> shape = {B, S, Hq, D};
      std::string what = std::string(c.name) + (causal ? " causal" : " full");
      attentionFwd(q.data(), k.data(), v.data(), out.data(), c.dims, causal,
                   scale);
      EXPECT_TRUE(allClose(what + " f64", out, ref, 1e-13, 1e-13, shape));
      std::vector<float> qf = cast<float>(q), kf = cast<float>(k),
                         vf = cast<float>(v), of(q.size());
      attentionFwd(qf.data(), kf.data(), vf.data(), of.data(), c.dims, causal,
                   scale);
      EXPECT_TRUE(allClose(what + " f32", of, ref, 2e-6, 2e-6, shape));
    }
}

TEST(Attention, BackwardFiniteDifference) {
  Rng rng;
  for (const Case &c : kCases)
    for (bool causal : {true, false}) {
      auto [B, S, Hq, Hkv, D] = c.dims;
      std::vector<double> q = rng.normal(B * S * Hq * D),
                          k = rng.normal(B * S * Hkv * D),
                          v = rng.normal(B * S * Hkv * D),
                          r = rng.normal(q.size());
      std::vector<double> out(q.size()), dq(q.size()), dk(k.size(), 9.0),
          dv(v.size(), 9.0);
      double scale = 0.7; // not 1/sqrt(D): checks scale is applied once
      attentionBwd(r.data(), q.data(), k.data(), v.data(), dq.data(), dk.data(),
                   dv.data(), c.dims, causal, scale);
      auto loss = [&] {
        attentionFwd(q.data(), k.data(), v.data(), out.data(), c.dims, causal,
                     scale);
        return dot(r, out);
      };
      std::string what = std::string(c.name) + (causal ? " causal" : " full");
      std::vector<int64_t> qs = {B, S, Hq, D}, ks = {B, S, Hkv, D};
      EXPECT_TRUE(gradCheck(what + " dq", q, dq, loss, 1e-6, qs));
      EXPECT_TRUE(gradCheck(what + " dk", k, dk, loss, 1e-6, ks));
      EXPECT_TRUE(gradCheck(what + " dv", v, dv, loss, 1e-6, ks));
    }
}

TEST(Attention, FloatMatchesDoubleAtTrainingShapes) {
  // Shapes past the vector paths' block sizes (16 keys, 8 x 8 transposes):
  // gpt_tiny's head (S = 64, D = 32) and one with remainders everywhere. The
  // f64 kernels are the reference (checked above against the explicit
  // softmax and finite differences).
  Rng rng;
  for (AttentionDims d :
       {AttentionDims{2, 64, 2, 2, 32}, AttentionDims{1, 67, 4, 2, 20}})
    for (bool causal : {true, false}) {
      auto [B, S, Hq, Hkv, D] = d;
      size_t qn = B * S * Hq * D, kn = B * S * Hkv * D;
      std::vector<double> q = rng.normal(qn), k = rng.normal(kn),
                          v = rng.normal(kn), r = rng.normal(qn), out(qn),
                          dq(qn), dk(kn), dv(kn);
      double scale = 1.0 / std::sqrt(double(D));
      attentionFwd(q.data(), k.data(), v.data(), out.data(), d, causal, scale);
      attentionBwd(r.data(), q.data(), k.data(), v.data(), dq.data(), dk.data(),
                   dv.data(), d, causal, scale);
      std::vector<float> qf = cast<float>(q), kf = cast<float>(k),
                         vf = cast<float>(v), rf = cast<float>(r), of(qn),
                         dqf(qn), dkf(kn), dvf(kn);
      attentionFwd(qf.data(), kf.data(), vf.data(), of.data(), d, causal,
                   scale);
      attentionBwd(rf.data(), qf.data(), kf.data(), vf.data(), dqf.data(),
                   dkf.data(), dvf.data(), d, causal, scale);
      std::string what = "S=" + std::to_string(S) + " D=" + std::to_string(D) +
                         (causal ? " causal" : " full");
      std::vector<int64_t> qs = {B, S, Hq, D}, ks = {B, S, Hkv, D};
      // Sums of <= 67 terms of O(1) products in f32 (inputs rounded to f32
      // too): a few 1e-6 relative, far below any indexing or masking error.
      EXPECT_TRUE(allClose(what + " out", of, out, 2e-5, 2e-5, qs));
      EXPECT_TRUE(allClose(what + " dq", dqf, dq, 2e-5, 2e-5, qs));
      EXPECT_TRUE(allClose(what + " dk", dkf, dk, 2e-5, 2e-5, ks));
      EXPECT_TRUE(allClose(what + " dv", dvf, dv, 2e-5, 2e-5, ks));
    }
}

} // namespace
