//===- Philox.cpp - Philox4x32-10 and dropout
//-------------------------------===//
#include "runtime/kernels/Philox.h"

#include "runtime/kernels/Shape.h"

namespace strata::kernels {
namespace {

// Random123 constants: round multipliers and Weyl key increments.
constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t &hi, uint32_t &lo) {
  uint64_t p = uint64_t(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

inline PhiloxCounter philoxRound(PhiloxCounter c, PhiloxKey k) {
  uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kPhiloxM0, c[0], hi0, lo0);
  mulhilo(kPhiloxM1, c[2], hi1, lo1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

template <typename T>
void dropout(const T *x, T *y, std::span<const int64_t> localShape,
             std::span<const int64_t> globalShape,
             std::span<const int64_t> offsets, double p, uint32_t seed,
             uint32_t stream, uint64_t step, const char *kernel) {
  size_t rank = localShape.size();
  STRATA_KCHECK(rank <= kMaxRank, kernel, "rank exceeds 8");
  STRATA_KCHECK(globalShape.size() == rank && offsets.size() == rank, kernel,
                "localShape, globalShape and offsets need the same rank");
  STRATA_KCHECK(p >= 0.0 && p <= 1.0, kernel, "p must be in [0, 1]");
  // Operand 0: local element offset; operand 1: global element index.
  detail::StridedView<2> v;
  v.rank = static_cast<int>(rank);
  v.stride[0] = detail::contiguousStrides(localShape);
  v.stride[1] = detail::contiguousStrides(globalShape);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    STRATA_KCHECK(
        offsets[d] >= 0 && offsets[d] + localShape[d] <= globalShape[d], kernel,
        "block [offset, offset+local) leaves the global shape");
    v.size[d] = localShape[d];
    base += offsets[d] * v.stride[1][d];
  }
  v.coalesce();
  T scale = p < 1.0 ? static_cast<T>(1.0 / (1.0 - p)) : T(0);
  detail::forEachRow(v, [&](const std::array<int64_t, 2> &off, int64_t n,
                            const std::array<int64_t, 2> &s) {
    for (int64_t i = 0; i < n; ++i) {
      uint64_t g = static_cast<uint64_t>(base + off[1] + i * s[1]);
      bool keep = dropoutUniform(g, seed, stream, step) >= p;
      y[off[0] + i * s[0]] = keep ? x[off[0] + i * s[0]] * scale : T(0);
    }
  });
}

} // namespace

PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key) {
  ctr = philoxRound(ctr, key);
  for (int r = 1; r < 10; ++r) {
    key = {key[0] + kPhiloxW0, key[1] + kPhiloxW1};
    ctr = philoxRound(ctr, key);
  }
  return ctr;
}

double dropoutUniform(uint64_t index, uint32_t seed, uint32_t stream,
                      uint64_t step) {
  PhiloxCounter out = philox4x32_10(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
       static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)},
      {seed, stream});
  return double(out[0]) * 0x1p-32;
}

template <typename T>
void dropoutFwd(const T *x, T *y, std::span<const int64_t> localShape,
                std::span<const int64_t> globalShape,
                std::span<const int64_t> offsets, double p, uint32_t seed,
                uint32_t stream, uint64_t step) {
  dropout(x, y, localShape, globalShape, offsets, p, seed, stream, step,
          "dropoutFwd");
}

template <typename T>
void dropoutBwd(const T *dy, T *dx, std::span<const int64_t> localShape,
                std::span<const int64_t> globalShape,
                std::span<const int64_t> offsets, double p, uint32_t seed,
                uint32_t stream, uint64_t step) {
  dropout(dy, dx, localShape, globalShape, offsets, p, seed, stream, step,
          "dropoutBwd");
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void dropoutFwd<T>(                                                 \
      const T *, T *, std::span<const int64_t>, std::span<const int64_t>,      \
      std::span<const int64_t>, double, uint32_t, uint32_t, uint64_t);         \
  template void dropoutBwd<T>(                                                 \
      const T *, T *, std::span<const int64_t>, std::span<const int64_t>,      \
      std::span<const int64_t>, double, uint32_t, uint32_t, uint64_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
