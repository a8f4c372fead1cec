//===- Reduce.h - Reductions over an arbitrary set of axes
//-----------------===//
//
// y = reduce(x) over `axes`; y holds the kept dims in order (keepdim does not
// change the raw data). Sums and means accumulate in double for both float
// and double, so the result does not drift with the reduced count.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <span>

namespace strata::kernels {

/// A reduction.
enum class ReduceOp { Sum, Max, Mean };

/// x is xShape (rank <= 8); axes are distinct dims in [-rank, rank), any
/// order; y is xShape with those dims removed. Max propagates NaN. An empty
/// axes list copies x.
template <typename T>
void reduce(ReduceOp op, const T *x, std::span<const int64_t> xShape,
            std::span<const int64_t> axes, T *y);

/// Shorthands for reduce().
template <typename T>
void reduceSum(const T *x, std::span<const int64_t> xShape,
               std::span<const int64_t> axes, T *y) {
  reduce(ReduceOp::Sum, x, xShape, axes, y);
}
template <typename T>
void reduceMax(const T *x, std::span<const int64_t> xShape,
               std::span<const int64_t> axes, T *y) {
  reduce(ReduceOp::Max, x, xShape, axes, y);
}
template <typename T>
void reduceMean(const T *x, std::span<const int64_t> xShape,
                std::span<const int64_t> axes, T *y) {
  reduce(ReduceOp::Mean, x, xShape, axes, y);
}

} // namespace strata::kernels
