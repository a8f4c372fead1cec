//===- Shape.h - Internal strided-iteration helpers for the CPU kernels
//----===//
//
// Internal to strata_kernels (not part of Kernels.h). A StridedView describes
// K operands walked over one common index space: sizes per dim plus a stride
// per operand and dim (0 = broadcast). coalesce() drops size-1 dims and merges
// dims that are contiguous for every operand, so most broadcasts and
// transposes collapse to one or two dims; forEachRow() then runs the
// innermost dim as plain strided loops, in parallel over rows (and segments
// of long rows).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/kernels/Check.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace strata::kernels {

/// Largest tensor rank the shape-generic kernels accept.
constexpr int kMaxRank = 8;

/// Number of elements of a shape (1 for rank 0).
inline int64_t numElements(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace detail {

using Dims = std::array<int64_t, kMaxRank>;

/// Row-major strides of `shape`.
inline Dims contiguousStrides(std::span<const int64_t> shape) {
  Dims s{};
  int64_t acc = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

/// Strides that read `in` (row-major) broadcast to `out` under numpy rules
/// (shapes right-aligned; an input dim must equal the output dim or be 1).
inline Dims broadcastStrides(std::span<const int64_t> in,
                             std::span<const int64_t> out, const char *kernel) {
  STRATA_KCHECK(in.size() <= out.size(), kernel,
                "input rank exceeds output rank in broadcast");
  Dims inStrides = contiguousStrides(in);
  Dims s{};
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    STRATA_KCHECK(in[d] == out[lead + d] || in[d] == 1, kernel,
                  "shapes are not broadcast-compatible (each input dim must "
                  "equal the output dim or be 1)");
    s[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  }
  return s;
}

template <int K> struct StridedView {
  int rank = 0;
  Dims size{};
  std::array<Dims, K> stride{};

  /// Drops size-1 dims and merges dim d into d+1 when every operand has
  /// stride[d] == stride[d+1] * size[d+1]. Leaves rank >= 1.
  void coalesce() {
    int r = 0;
    for (int d = 0; d < rank; ++d) {
      if (size[d] == 1)
        continue;
      if (r > 0) {
        bool mergeable = true;
        for (int k = 0; k < K; ++k)
          mergeable &= stride[k][r - 1] == stride[k][d] * size[d];
        if (mergeable) {
          size[r - 1] *= size[d];
          for (int k = 0; k < K; ++k)
            stride[k][r - 1] = stride[k][d];
          continue;
        }
      }
      size[r] = size[d];
      for (int k = 0; k < K; ++k)
        stride[k][r] = stride[k][d];
      ++r;
    }
    if (r == 0) {
      size[0] = 1;
      for (int k = 0; k < K; ++k)
        stride[k][0] = 0;
      r = 1;
    }
    rank = r;
  }
};

/// Calls fn(offsets, n, innerStrides) once per segment of an innermost row
/// of `v`: offsets[k] is operand k's element offset of the segment's first
/// element, n the segment length and innerStrides[k] operand k's stride along
/// it. Rows longer than kRowSegment are cut into segments so that a fully
/// coalesced view (one long row) still spreads over threads. Segments run in
/// parallel; fn must only write locations of its own segment.
constexpr int64_t kRowSegment = 16384;

template <int K, typename Fn>
void forEachRow(const StridedView<K> &v, Fn &&fn) {
  int inner = v.rank - 1;
  int64_t n = v.size[inner];
  if (n == 0)
    return;
  int64_t rows = 1;
  for (int d = 0; d < inner; ++d)
    rows *= v.size[d];
  std::array<int64_t, K> innerStrides;
  for (int k = 0; k < K; ++k)
    innerStrides[k] = v.stride[k][inner];
  int64_t seg = std::min(n, kRowSegment);
  int64_t segs = (n + seg - 1) / seg;
  // Aim for >= ~16K elements per chunk so thread start-up stays negligible.
  int64_t grain = std::max<int64_t>(1, kRowSegment / seg);
  parallelFor(0, rows * segs, grain, [&](int64_t lo, int64_t hi) {
    // Decompose the first row index into a multi-index, then step it like an
    // odometer, updating offsets incrementally.
    Dims idx{};
    std::array<int64_t, K> off{};
    int64_t rem = lo / segs, s = lo % segs;
    for (int d = inner - 1; d >= 0; --d) {
      idx[d] = rem % v.size[d];
      rem /= v.size[d];
      for (int k = 0; k < K; ++k)
        off[k] += idx[d] * v.stride[k][d];
    }
    for (int64_t item = lo; item < hi; ++item) {
      int64_t start = s * seg;
      std::array<int64_t, K> segOff;
      for (int k = 0; k < K; ++k)
        segOff[k] = off[k] + start * innerStrides[k];
      fn(segOff, std::min(seg, n - start), innerStrides);
      if (++s < segs)
        continue;
      s = 0;
      for (int d = inner - 1; d >= 0; --d) {
        for (int k = 0; k < K; ++k)
          off[k] += v.stride[k][d];
        if (++idx[d] < v.size[d])
          break;
        for (int k = 0; k < K; ++k)
          off[k] -= v.stride[k][d] * v.size[d];
        idx[d] = 0;
      }
    }
  });
}

} // namespace detail
} // namespace strata::kernels
