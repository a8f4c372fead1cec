//===- VocabParallel.cpp - Vocab-parallel cross-entropy pieces
//--------------===//
#include "runtime/kernels/VocabParallel.h"

#include "runtime/kernels/Parallel.h"

#include <algorithm>

namespace strata::kernels {

template <typename T>
void pickLabel(const T *x, const int32_t *labels, T *out, int64_t N, int64_t C,
               int64_t c0) {
  for (int64_t n = 0; n < N; ++n) {
    int64_t c = int64_t(labels[n]) - c0;
    out[n] = c >= 0 && c < C ? x[n * C + c] : T(0);
  }
}

template <typename T>
void oneHot(const int32_t *labels, T *out, int64_t N, int64_t C, int64_t c0) {
  parallelFor(0, N, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)),
              [&](int64_t lo, int64_t hi) {
                std::fill(out + lo * C, out + hi * C, T(0));
                for (int64_t n = lo; n < hi; ++n) {
                  int64_t c = int64_t(labels[n]) - c0;
                  if (c >= 0 && c < C)
                    out[n * C + c] = T(1);
                }
              });
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void pickLabel<T>(const T *, const int32_t *, T *, int64_t,         \
                             int64_t, int64_t);                                \
  template void oneHot<T>(const int32_t *, T *, int64_t, int64_t, int64_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
