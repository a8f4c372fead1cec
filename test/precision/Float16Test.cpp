//===- Float16Test.cpp - bf16 / fp16 conversions against references -------===//
//
// fp16: against the CPU's own F16C instructions (vcvtps2ph with
// round-to-nearest-even, vcvtph2ps) over every half and 2^20 random floats.
// bf16: against its definition (the nearer of the two bf16 neighbours of a
// float, the even one on a tie), computed in double, and PyTorch's NaN.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <immintrin.h>

namespace strata::kernels {
namespace {

std::vector<float> testFloats() {
  std::mt19937 rng(7);
  std::vector<float> xs;
  for (int i = 0; i < (1 << 20); ++i)
    xs.push_back(bitsToFloat(uint32_t(rng()))); // every exponent, NaNs too
  for (float f : {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, 1e-8f, 6e-8f, 3.0e38f,
                  INFINITY, -INFINITY})
    xs.push_back(f);
  return xs;
}

/// The bf16 bits of `x` by definition: truncate, then step up when the
/// truncated-away part is more than half an ulp (or exactly half and the
/// truncation is odd).
uint16_t bf16ByDefinition(float x) {
  if (std::isnan(x))
    return 0x7fc0; // PyTorch's c10::BFloat16 NaN
  uint16_t lo = uint16_t(floatToBits(x) >> 16);
  double below = bf16ToFloat(lo);
  uint16_t up = uint16_t(lo + 1);
  // Past the largest finite bf16 the next step is 2^128 (infinity).
  double above = (lo & 0x7fff) == 0x7f7f ? std::copysign(0x1p128, x)
                                         : double(bf16ToFloat(up));
  double dl = std::fabs(double(x) - below), du = std::fabs(above - double(x));
  if (std::isinf(x))
    return lo;
  if (dl < du || (dl == du && (lo & 1) == 0))
    return lo;
  return up;
}

TEST(Float16, HalfMatchesF16cOnEveryHalfAndRandomFloats) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float want = _cvtsh_ss(uint16_t(h));
    float got = halfToFloat(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(floatToBits(got), floatToBits(want))
        << "half 0x" << std::hex << h;
  }
  for (float x : testFloats()) {
    uint16_t want = _cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
    uint16_t got = floatToHalf(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(halfToFloat(got)));
      continue;
    }
    ASSERT_EQ(got, want) << "float " << x;
  }
}

TEST(Float16, Bf16RoundsToNearestEven) {
  for (float x : testFloats())
    ASSERT_EQ(floatToBf16(x), bf16ByDefinition(x)) << "float " << x;
  // Every bf16 round-trips through float.
  for (uint32_t h = 0; h < 65536; ++h)
    if (!std::isnan(bf16ToFloat(uint16_t(h))))
      ASSERT_EQ(floatToBf16(bf16ToFloat(uint16_t(h))), h);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: to even (1).
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
}

TEST(Float16, BulkConversionsEqualScalar) {
  std::vector<float> xs = testFloats();
  std::vector<uint16_t> b(xs.size()), h(xs.size());
  floatToBf16(xs.data(), b.data(), int64_t(xs.size()));
  floatToHalf(xs.data(), h.data(), int64_t(xs.size()));
  std::vector<float> bb(xs.size()), hh(xs.size());
  bf16ToFloat(b.data(), bb.data(), int64_t(xs.size()));
  halfToFloat(h.data(), hh.data(), int64_t(xs.size()));
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(b[i], floatToBf16(xs[i]));
    ASSERT_EQ(h[i], floatToHalf(xs[i]));
    ASSERT_EQ(floatToBits(bb[i]), floatToBits(bf16ToFloat(b[i])));
    ASSERT_EQ(floatToBits(hh[i]), floatToBits(halfToFloat(h[i])));
  }
}

} // namespace
} // namespace strata::kernels
