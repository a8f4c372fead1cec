//===- Float16.h - bf16 and fp16 storage, fp32 math -----------------------===//
//
// 16-bit floats are a storage format: a kernel loads them as float, computes
// in float and rounds once, when it stores. Rounding is to nearest, ties to
// even, as PyTorch and CUDA's __float2bfloat16_rn / __float2half_rn round;
// a NaN stays a (quiet) NaN, and values beyond the format's range become
// infinities (fp16's largest finite value is 65504).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace strata::kernels {

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// bf16 is the high half of an fp32.
inline float bf16ToFloat(uint16_t h) { return bitsToFloat(uint32_t(h) << 16); }
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatToBits(f);
  if (std::isnan(f))
    return 0x7fc0;
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

/// IEEE binary16, by the branch-free conversions of Maratyszcza's FP16
/// library (exact for every value, subnormals included).
inline float halfToFloat(uint16_t h) {
  uint32_t w = uint32_t(h) << 16;
  uint32_t sign = w & 0x80000000u;
  uint32_t twoW = w + w;
  float normalized = bitsToFloat((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  float denormalized = bitsToFloat((twoW >> 17) | (126u << 23)) - 0.5f;
  uint32_t bits =
      twoW < (1u << 27) ? floatToBits(denormalized) : floatToBits(normalized);
  return bitsToFloat(sign | bits);
}
inline uint16_t floatToHalf(float f) {
  float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
  uint32_t w = floatToBits(f);
  uint32_t shl1 = w + w;
  uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1 & 0xFF000000u;
  if (bias < 0x71000000u)
    bias = 0x71000000u;
  base = bitsToFloat((bias >> 1) + 0x07800000u) + base;
  uint32_t bits = floatToBits(base);
  uint32_t nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
  return uint16_t((sign >> 16) | (shl1 > 0xFF000000u ? 0x7E00u : nonsign));
}

/// Whole buffers (multi-threaded): x is n 16-bit values, y is n floats.
void bf16ToFloat(const uint16_t *x, float *y, int64_t n);
void floatToBf16(const float *x, uint16_t *y, int64_t n);
void halfToFloat(const uint16_t *x, float *y, int64_t n);
void floatToHalf(const float *x, uint16_t *y, int64_t n);

} // namespace strata::kernels
