//===- PhiloxTest.cpp - Philox4x32-10 KATs and sharded dropout masks
//-------===//
#include "runtime/kernels/Philox.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

// Random123's published known-answer vectors (kat_vectors, philox4x32 10):
// counter (4 words), key (2 words) -> output (4 words).
TEST(Philox, KnownAnswerVectors) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, DropoutUniformUsesDocumentedCounterLayout) {
  // counter = {lo(i), hi(i), lo(step), hi(step)}, key = {seed, stream},
  // u = word 0 / 2^32.
  uint64_t i = 0x123456789ull, step = 0x1'0000'0007ull;
  PhiloxCounter out = philox4x32_10({0x23456789, 0x1, 0x7, 0x1}, {42, 3});
  EXPECT_EQ(dropoutUniform(i, 42, 3, step), out[0] / 4294967296.0);
  EXPECT_LT(dropoutUniform(i, 42, 3, step), 1.0);
}

using Shape = std::vector<int64_t>;

TEST(Dropout, SliceOfMaskEqualsMaskOfSlice) {
  // A block of a [4, 6, 10] tensor at offsets [1, 2, 3], shape [2, 3, 5]
  // (e.g. one rank's shard of the batch, heads and hidden dims).
  Shape global = {4, 6, 10}, local = {2, 3, 5}, offsets = {1, 2, 3},
        zero = {0, 0, 0};
  const double p = 0.3;
  std::vector<double> ones(4 * 6 * 10, 1.0), full(ones.size());
  dropoutFwd(ones.data(), full.data(), global, global, zero, p, 7, 1, 11);
  std::vector<double> block(2 * 3 * 5, 1.0), expect;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 5; ++c)
        expect.push_back(full[((a + 1) * 6 + (b + 2)) * 10 + (c + 3)]);
  dropoutFwd(block.data(), block.data(), local, global, offsets, p, 7, 1, 11);
  EXPECT_TRUE(allClose("dropout block", block, expect, 0, 0, local));
  // float draws the same mask.
  std::vector<float> blockF(block.size(), 1.0f);
  dropoutFwd(blockF.data(), blockF.data(), local, global, offsets, p, 7, 1, 11);
  EXPECT_TRUE(allClose("dropout block f32", blockF, expect, 0, 1e-7, local));
}

TEST(Dropout, KeepRateAndScale) {
  const int64_t n = 200000;
  Shape s = {n}, zero = {0};
  for (double p : {0.1, 0.5}) {
    std::vector<float> x(n, 1.0f), y(n);
    dropoutFwd(x.data(), y.data(), s, s, zero, p, 1234, 0, 0);
    int64_t kept = 0;
    for (float v : y) {
      kept += v != 0.0f;
      ASSERT_TRUE(v == 0.0f || std::abs(v - 1.0 / (1.0 - p)) < 1e-6) << v;
    }
    // Binomial: sd = sqrt(p (1-p) / n) <= 1.2e-3; allow ~4 sd.
    EXPECT_NEAR(double(kept) / n, 1.0 - p, 5e-3) << "p " << p;
  }
}

TEST(Dropout, MaskDependsOnSeedStreamStep) {
  const int64_t n = 256;
  Shape s = {n}, zero = {0};
  std::vector<double> x(n, 1.0), base(n), other(n);
  dropoutFwd(x.data(), base.data(), s, s, zero, 0.5, 1, 2, 3);
  dropoutFwd(x.data(), other.data(), s, s, zero, 0.5, 1, 2, 3);
  EXPECT_EQ(base, other); // deterministic
  for (auto [seed, stream, step] :
       {std::tuple{9u, 2u, 3ull}, {1u, 9u, 3ull}, {1u, 2u, 9ull}}) {
    dropoutFwd(x.data(), other.data(), s, s, zero, 0.5, seed, stream, step);
    EXPECT_NE(base, other) << seed << " " << stream << " " << step;
  }
}

TEST(Dropout, EdgeProbabilities) {
  Shape s = {2, 3}, zero = {0, 0};
  std::vector<double> x = {1, -2, 3, -4, 5, -6}, y(6);
  dropoutFwd(x.data(), y.data(), s, s, zero, 0.0, 5, 0, 0);
  EXPECT_EQ(y, x);
  dropoutFwd(x.data(), y.data(), s, s, zero, 1.0, 5, 0, 0);
  EXPECT_EQ(y, std::vector<double>(6, 0.0));
}

TEST(Dropout, BackwardUsesSameMask) {
  Shape global = {3, 8}, local = {3, 4}, offsets = {0, 4};
  Rng rng;
  std::vector<double> x = rng.normal(12), r = rng.normal(12), y(12), dx(12),
                      mask(12);
  const double p = 0.4;
  std::vector<double> ones(12, 1.0);
  dropoutFwd(ones.data(), mask.data(), local, global, offsets, p, 3, 4, 5);
  dropoutBwd(r.data(), dx.data(), local, global, offsets, p, 3, 4, 5);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(dx[i], r[i] * mask[i]) << i;
  auto loss = [&] {
    dropoutFwd(x.data(), y.data(), local, global, offsets, p, 3, 4, 5);
    return dot(r, y);
  };
  EXPECT_TRUE(gradCheck("dropout dx", x, dx, loss, 1e-6, local));
}

} // namespace
