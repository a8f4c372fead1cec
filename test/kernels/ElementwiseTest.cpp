//===- ElementwiseTest.cpp - Unary and broadcasting binary kernels --------===//
#include "runtime/kernels/Elementwise.h"

#include "TestUtil.h"

#include <array>

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

constexpr std::array<UnaryOp, kNumUnaryOps> kAllUnary = {
#define STRATA_ENTRY(E, name) UnaryOp::E,
    STRATA_UNARY_OPS(STRATA_ENTRY)
#undef STRATA_ENTRY
};

/// Independent per-op reference, written from the math definitions.
double unaryRef(UnaryOp op, double x) {
  const double pi = 3.14159265358979323846;
  switch (op) {
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Exp:
    return std::exp(x);
  case UnaryOp::Log:
    return std::log(x);
  case UnaryOp::Sqrt:
    return std::sqrt(x);
  case UnaryOp::Rsqrt:
    return std::pow(x, -0.5);
  case UnaryOp::Tanh:
    return std::tanh(x);
  case UnaryOp::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case UnaryOp::Relu:
    return std::max(x, 0.0);
  case UnaryOp::GeluTanh:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
  case UnaryOp::GeluErf:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case UnaryOp::Silu:
    return x / (1.0 + std::exp(-x));
  case UnaryOp::Square:
    return x * x;
  }
  return NAN;
}

/// Inputs inside each op's domain, away from relu's kink at 0.
std::vector<double> inputsFor(UnaryOp op, Rng &rng, size_t n) {
  bool positive =
      op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt;
  std::vector<double> x =
      positive ? rng.uniform(n, 0.2, 4.0) : rng.uniform(n, -4.0, 4.0);
  for (double &v : x)
    if (std::abs(v) < 1e-3)
      v = 0.5;
  return x;
}

TEST(Unary, ForwardMatchesFormula) {
  Rng rng;
  for (UnaryOp op : kAllUnary) {
    std::vector<double> x = inputsFor(op, rng, 257), ref(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      ref[i] = unaryRef(op, x[i]);
    std::vector<double> y(x.size());
    unaryFwd(op, x.data(), y.data(), int64_t(x.size()));
    EXPECT_TRUE(
        allClose(std::string(unaryOpName(op)) + " f64", y, ref, 1e-14, 1e-13));
    // float: inputs rounded to float, so compare with the formula at those
    // inputs; float math is good to a few ulps (~1e-7 relative).
    std::vector<float> xf = cast<float>(x), yf(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      ref[i] = unaryRef(op, xf[i]);
    unaryFwd(op, xf.data(), yf.data(), int64_t(x.size()));
    EXPECT_TRUE(
        allClose(std::string(unaryOpName(op)) + " f32", yf, ref, 1e-6, 1e-6));
  }
}

TEST(Unary, SigmoidAndSiluStableForLargeInputs) {
  std::vector<double> x = {-800.0, -50.0, 50.0, 800.0}, y(4);
  unaryFwd(UnaryOp::Sigmoid, x.data(), y.data(), 4);
  EXPECT_TRUE(
      allClose("sigmoid", y, {0.0, std::exp(-50.0), 1.0, 1.0}, 1e-300, 1e-12));
  unaryFwd(UnaryOp::Silu, x.data(), y.data(), 4);
  for (double v : y)
    EXPECT_TRUE(std::isfinite(v));
}

TEST(Unary, BackwardFiniteDifference) {
  Rng rng;
  for (UnaryOp op : kAllUnary) {
    std::vector<double> x = inputsFor(op, rng, 64), r = rng.normal(64);
    std::vector<double> y(64), dx(64);
    unaryBwd(op, r.data(), x.data(), dx.data(), 64);
    auto loss = [&] {
      unaryFwd(op, x.data(), y.data(), 64);
      return dot(r, y);
    };
    EXPECT_TRUE(gradCheck(unaryOpName(op), x, dx, loss));
  }
}

TEST(Unary, NamedGradsMatchTable) {
  Rng rng;
  std::vector<double> x = rng.uniform(32, -3, 3), dy = rng.normal(32);
  std::vector<double> a(32), b(32);
  geluGrad(dy.data(), x.data(), a.data(), 32);
  unaryBwd(UnaryOp::GeluTanh, dy.data(), x.data(), b.data(), 32);
  EXPECT_EQ(a, b);
  geluGrad(dy.data(), x.data(), a.data(), 32, GeluApprox::None);
  unaryBwd(UnaryOp::GeluErf, dy.data(), x.data(), b.data(), 32);
  EXPECT_EQ(a, b);
  siluGrad(dy.data(), x.data(), a.data(), 32);
  unaryBwd(UnaryOp::Silu, dy.data(), x.data(), b.data(), 32);
  EXPECT_EQ(a, b);
  reluGrad(dy.data(), x.data(), a.data(), 32);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(a[i], x[i] > 0 ? dy[i] : 0.0);
}

TEST(Unary, Scale) {
  std::vector<double> x = {1, -2, 3.5}, y(3);
  scale(x.data(), y.data(), 3, -0.5);
  EXPECT_TRUE(allClose("scale", y, {-0.5, 1.0, -1.75}, 0, 0));
}

// ---- binary ---------------------------------------------------------------

double binaryRef(BinaryOp op, double a, double b) {
  switch (op) {
  case BinaryOp::Add:
    return a + b;
  case BinaryOp::Sub:
    return a - b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return a / b;
  case BinaryOp::Max:
    return std::max(a, b);
  case BinaryOp::Min:
    return std::min(a, b);
  }
  return NAN;
}

/// Naive numpy broadcasting: for each output multi-index, read each input at
/// the index clamped to 0 on its size-1 (or missing leading) dims.
std::vector<double> broadcastRef(BinaryOp op, const std::vector<double> &a,
                                 std::vector<int64_t> as,
                                 const std::vector<double> &b,
                                 std::vector<int64_t> bs,
                                 std::vector<int64_t> os) {
  auto read = [&](const std::vector<double> &v, const std::vector<int64_t> &s,
                  const std::vector<int64_t> &idx) {
    int64_t off = 0;
    size_t lead = os.size() - s.size();
    for (size_t d = 0; d < s.size(); ++d)
      off = off * s[d] + (s[d] == 1 ? 0 : idx[lead + d]);
    return v[off];
  };
  int64_t n = 1;
  for (int64_t d : os)
    n *= d;
  std::vector<double> out(n);
  std::vector<int64_t> idx(os.size());
  for (int64_t f = 0; f < n; ++f) {
    int64_t rem = f;
    for (int d = int(os.size()) - 1; d >= 0; --d) {
      idx[d] = rem % os[d];
      rem /= os[d];
    }
    out[f] = binaryRef(op, read(a, as, idx), read(b, bs, idx));
  }
  return out;
}

struct BroadcastCase {
  std::vector<int64_t> a, b, out;
};

TEST(Binary, BroadcastingMatchesNaive) {
  const std::vector<BroadcastCase> cases = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}, // same shape
      {{2, 3, 4}, {4}, {2, 3, 4}},       // trailing vector
      {{4}, {2, 3, 4}, {2, 3, 4}},       // trailing vector on the left
      {{2, 1, 4}, {3, 1}, {2, 3, 4}},    // both broadcast
      {{}, {2, 3}, {2, 3}},              // scalar
      {{2, 3}, {1}, {2, 3}},             // size-1 vector
      {{3, 1, 2, 1, 2}, {1, 2, 1, 3, 2}, {3, 2, 2, 3, 2}}, // rank 5, mixed
      {{2, 5, 3}, {2, 1, 3}, {2, 5, 3}},                   // middle broadcast
      {{1, 1, 1, 1, 1, 1, 1, 3},
       {2, 1, 1, 1, 1, 1, 2, 1},
       {2, 1, 1, 1, 1, 1, 2, 3}}, // rank 8
  };
  Rng rng;
  for (const BroadcastCase &c : cases)
    for (int o = 0; o < kNumBinaryOps; ++o) {
      BinaryOp op = static_cast<BinaryOp>(o);
      auto numel = [](const std::vector<int64_t> &s) {
        int64_t n = 1;
        for (int64_t d : s)
          n *= d;
        return size_t(n);
      };
      std::vector<double> a = rng.uniform(numel(c.a), 0.5, 2.0);
      std::vector<double> b = rng.uniform(numel(c.b), -2.0, -0.5);
      std::vector<double> ref = broadcastRef(op, a, c.a, b, c.b, c.out);
      std::vector<double> out(ref.size());
      binaryFwd(op, a.data(), c.a, b.data(), c.b, out.data(), c.out);
      EXPECT_TRUE(allClose(binaryOpName(op), out, ref, 0, 0, c.out))
          << "case " << (&c - cases.data());
      std::vector<float> af = cast<float>(a), bf = cast<float>(b),
                         outf(ref.size());
      binaryFwd(op, af.data(), c.a, bf.data(), c.b, outf.data(), c.out);
      // float: inputs and result each rounded once (<= 6e-8 relative each).
      EXPECT_TRUE(allClose(binaryOpName(op), outf, ref, 1e-6, 3e-7, c.out));
    }
}

TEST(Binary, MaxMinPropagateNaN) {
  std::vector<int64_t> s = {3};
  std::vector<double> a = {NAN, 1.0, 2.0}, b = {1.0, NAN, 0.0}, out(3);
  binaryFwd(BinaryOp::Max, a.data(), s, b.data(), s, out.data(), s);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && out[2] == 2.0);
  binaryFwd(BinaryOp::Min, a.data(), s, b.data(), s, out.data(), s);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && out[2] == 0.0);
}

} // namespace
