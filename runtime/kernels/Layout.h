//===- Layout.h - Data-movement kernels: transpose, broadcast, slice, concat
//===//
//
// Shape-generic copies between row-major contiguous buffers (rank <= 8). Dims
// may be given negative (counted from the end). Outputs are overwritten and
// must not alias inputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>

namespace strata::kernels {

/// y = x.permute(perm): y's dim i is x's dim perm[i]. x is xShape.
template <typename T>
void transpose(const T *x, std::span<const int64_t> xShape,
               std::span<const int64_t> perm, T *y);

/// y = x broadcast to yShape (numpy rules, shapes right-aligned).
template <typename T>
void broadcastTo(const T *x, std::span<const int64_t> xShape, T *y,
                 std::span<const int64_t> yShape);

/// y = x[..., start:start+length, ...] along `dim`. x is xShape; y is xShape
/// with dim replaced by length.
template <typename T>
void slice(const T *x, std::span<const int64_t> xShape, int64_t dim,
           int64_t start, int64_t length, T *y);

/// Gradient of slice: dx (xShape) = 0 except dx[..., start:start+length, ...]
/// = dy. Overwrites all of dx.
template <typename T>
void sliceBwd(const T *dy, std::span<const int64_t> xShape, int64_t dim,
              int64_t start, int64_t length, T *dx);

/// y = concat(xs, dim). Input i has outShape with dim replaced by sizes[i];
/// sum(sizes) == outShape[dim]. The gradient of concat is slice.
template <typename T>
void concat(std::span<const T *const> xs, std::span<const int64_t> sizes,
            std::span<const int64_t> outShape, int64_t dim, T *y);

} // namespace strata::kernels
