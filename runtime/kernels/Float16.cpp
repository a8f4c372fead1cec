//===- Float16.cpp - bf16 and fp16 buffers to and from fp32 ---------------===//
#include "runtime/kernels/Float16.h"

#include "runtime/kernels/Parallel.h"

namespace strata::kernels {

namespace {
/// Elements per chunk: a conversion is a few cycles per element.
constexpr int64_t kGrain = 1 << 15;

template <typename From, typename To, To (*Convert)(From)>
void convert(const From *x, To *y, int64_t n) {
  parallelFor(0, n, kGrain, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i)
      y[i] = Convert(x[i]);
  });
}
} // namespace

void bf16ToFloat(const uint16_t *x, float *y, int64_t n) {
  convert<uint16_t, float, bf16ToFloat>(x, y, n);
}
void floatToBf16(const float *x, uint16_t *y, int64_t n) {
  convert<float, uint16_t, floatToBf16>(x, y, n);
}
void halfToFloat(const uint16_t *x, float *y, int64_t n) {
  convert<uint16_t, float, halfToFloat>(x, y, n);
}
void floatToHalf(const float *x, uint16_t *y, int64_t n) {
  convert<float, uint16_t, floatToHalf>(x, y, n);
}

} // namespace strata::kernels
