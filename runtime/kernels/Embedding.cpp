//===- Embedding.cpp - Vocab-parallel embedding lookup and gradient
//---------===//
#include "runtime/kernels/Embedding.h"

#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <cstring>

namespace strata::kernels {

template <typename T>
void embeddingFwd(const T *table, const int32_t *ids, T *out, int64_t N,
                  int64_t V, int64_t H, int64_t vocabStart) {
  parallelFor(0, N, std::max<int64_t>(1, 16384 / std::max<int64_t>(H, 1)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t n = lo; n < hi; ++n) {
                  int64_t row = int64_t(ids[n]) - vocabStart;
                  T *o = out + n * H;
                  if (row >= 0 && row < V)
                    std::memcpy(o, table + row * H, H * sizeof(T));
                  else
                    std::fill(o, o + H, T(0));
                }
              });
}

template <typename T>
void embeddingBwd(const T *dy, const int32_t *ids, T *dtable, int64_t N,
                  int64_t V, int64_t H, int64_t vocabStart) {
  // Repeated ids make rows collide, so threads split the H columns instead of
  // the ids: each thread walks every id in order over its own column range.
  parallelFor(0, H, 64, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < N; ++n) {
      int64_t row = int64_t(ids[n]) - vocabStart;
      if (row < 0 || row >= V)
        continue;
      T *d = dtable + row * H;
      const T *g = dy + n * H;
      for (int64_t c = c0; c < c1; ++c)
        d[c] += g[c];
    }
  });
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void embeddingFwd<T>(const T *, const int32_t *, T *, int64_t,      \
                                int64_t, int64_t, int64_t);                    \
  template void embeddingBwd<T>(const T *, const int32_t *, T *, int64_t,      \
                                int64_t, int64_t, int64_t);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
