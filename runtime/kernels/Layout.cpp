//===- Layout.cpp - transpose, broadcastTo, slice, concat -----------------===//
#include "runtime/kernels/Layout.h"

#include "runtime/kernels/Shape.h"

#include <cstring>

namespace strata::kernels {
namespace {

int normDim(int64_t dim, size_t rank, const char *kernel) {
  int r = static_cast<int>(rank);
  STRATA_KCHECK(dim >= -r && dim < r, kernel, "dim out of range");
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

/// Copies along a 2-operand view: operand 0 is the destination.
template <typename T>
void stridedCopy(detail::StridedView<2> v, const T *x, T *y) {
  v.coalesce();
  detail::forEachRow(v, [&](const std::array<int64_t, 2> &off, int64_t n,
                            const std::array<int64_t, 2> &s) {
    T *o = y + off[0];
    const T *in = x + off[1];
    if (s[0] == 1 && s[1] == 1) {
      std::memcpy(o, in, n * sizeof(T));
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i * s[0]] = in[i * s[1]];
    }
  });
}

// Shape split around `dim`: (outer, size of dim, inner).
struct Split {
  int64_t outer = 1, inner = 1;
};
Split splitAt(std::span<const int64_t> shape, int d) {
  Split s;
  for (int i = 0; i < d; ++i)
    s.outer *= shape[i];
  for (size_t i = d + 1; i < shape.size(); ++i)
    s.inner *= shape[i];
  return s;
}

} // namespace

template <typename T>
void transpose(const T *x, std::span<const int64_t> xShape,
               std::span<const int64_t> perm, T *y) {
  const char *kernel = "transpose";
  size_t rank = xShape.size();
  STRATA_KCHECK(rank <= kMaxRank, kernel, "rank exceeds 8");
  STRATA_KCHECK(perm.size() == rank, kernel, "perm length != rank");
  detail::Dims xStrides = detail::contiguousStrides(xShape);
  detail::StridedView<2> v;
  v.rank = static_cast<int>(rank);
  bool seen[kMaxRank] = {};
  for (size_t i = 0; i < rank; ++i) {
    int p = normDim(perm[i], rank, kernel);
    STRATA_KCHECK(!seen[p], kernel, "perm is not a permutation");
    seen[p] = true;
    v.size[i] = xShape[p];
    v.stride[1][i] = xStrides[p];
  }
  v.stride[0] = detail::contiguousStrides(std::span(v.size.data(), rank));
  stridedCopy(v, x, y);
}

template <typename T>
void broadcastTo(const T *x, std::span<const int64_t> xShape, T *y,
                 std::span<const int64_t> yShape) {
  const char *kernel = "broadcastTo";
  STRATA_KCHECK(yShape.size() <= kMaxRank, kernel, "rank exceeds 8");
  detail::StridedView<2> v;
  v.rank = static_cast<int>(yShape.size());
  for (int d = 0; d < v.rank; ++d)
    v.size[d] = yShape[d];
  v.stride[0] = detail::contiguousStrides(yShape);
  v.stride[1] = detail::broadcastStrides(xShape, yShape, kernel);
  stridedCopy(v, x, y);
}

template <typename T>
void slice(const T *x, std::span<const int64_t> xShape, int64_t dim,
           int64_t start, int64_t length, T *y) {
  int d = normDim(dim, xShape.size(), "slice");
  STRATA_KCHECK(start >= 0 && length >= 0 && start + length <= xShape[d],
                "slice", "window [start, start+length) outside the dim");
  Split s = splitAt(xShape, d);
  int64_t inBlock = xShape[d] * s.inner, outBlock = length * s.inner;
  parallelFor(
      0, s.outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(outBlock, 1)),
      [&](int64_t lo, int64_t hi) {
        for (int64_t o = lo; o < hi; ++o)
          std::memcpy(y + o * outBlock, x + o * inBlock + start * s.inner,
                      outBlock * sizeof(T));
      });
}

template <typename T>
void sliceBwd(const T *dy, std::span<const int64_t> xShape, int64_t dim,
              int64_t start, int64_t length, T *dx) {
  int d = normDim(dim, xShape.size(), "sliceBwd");
  STRATA_KCHECK(start >= 0 && length >= 0 && start + length <= xShape[d],
                "sliceBwd", "window [start, start+length) outside the dim");
  Split s = splitAt(xShape, d);
  int64_t inBlock = xShape[d] * s.inner, outBlock = length * s.inner;
  parallelFor(0, s.outer,
              std::max<int64_t>(1, 16384 / std::max<int64_t>(inBlock, 1)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t o = lo; o < hi; ++o) {
                  T *row = dx + o * inBlock;
                  std::fill(row, row + inBlock, T(0));
                  std::memcpy(row + start * s.inner, dy + o * outBlock,
                              outBlock * sizeof(T));
                }
              });
}

template <typename T>
void concat(std::span<const T *const> xs, std::span<const int64_t> sizes,
            std::span<const int64_t> outShape, int64_t dim, T *y) {
  int d = normDim(dim, outShape.size(), "concat");
  STRATA_KCHECK(xs.size() == sizes.size(), "concat", "need one size per input");
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  STRATA_KCHECK(total == outShape[d], "concat",
                "input sizes along dim do not add up to the output's");
  Split s = splitAt(outShape, d);
  int64_t outBlock = total * s.inner;
  parallelFor(0, s.outer,
              std::max<int64_t>(1, 16384 / std::max<int64_t>(outBlock, 1)),
              [&](int64_t lo, int64_t hi) {
                for (int64_t o = lo; o < hi; ++o) {
                  int64_t at = 0;
                  for (size_t i = 0; i < xs.size(); ++i) {
                    int64_t block = sizes[i] * s.inner;
                    std::memcpy(y + o * outBlock + at, xs[i] + o * block,
                                block * sizeof(T));
                    at += block;
                  }
                }
              });
}

#define STRATA_INSTANTIATE(T)                                                  \
  template void transpose<T>(const T *, std::span<const int64_t>,              \
                             std::span<const int64_t>, T *);                   \
  template void broadcastTo<T>(const T *, std::span<const int64_t>, T *,       \
                               std::span<const int64_t>);                      \
  template void slice<T>(const T *, std::span<const int64_t>, int64_t,         \
                         int64_t, int64_t, T *);                               \
  template void sliceBwd<T>(const T *, std::span<const int64_t>, int64_t,      \
                            int64_t, int64_t, T *);                            \
  template void concat<T>(std::span<const T *const>, std::span<const int64_t>, \
                          std::span<const int64_t>, int64_t, T *);
STRATA_INSTANTIATE(float)
STRATA_INSTANTIATE(double)
#undef STRATA_INSTANTIATE

} // namespace strata::kernels
