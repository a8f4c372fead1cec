//===- Norms.h - LayerNorm and RMSNorm, forward and backward
//---------------===//
//
// Both normalize each row of x (N, C) over its C channels; statistics are
// accumulated in double. The backward kernels recompute the per-row
// statistics from x instead of taking saved ones, and OVERWRITE all of their
// outputs (dx, dw, db); they never accumulate.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// y = (x - mean) * rstd * w + b per row, rstd = 1/sqrt(var + eps) with the
/// biased variance. x, y are (N, C); w, b are (C); b may be null (no bias).
template <typename T>
void layerNormFwd(const T *x, const T *w, const T *b, T *y, int64_t N,
                  int64_t C, double eps);

/// Gradients of layerNormFwd. dy, x, dx are (N, C); w, dw, db are (C).
/// db may be null (bias-free layer norm).
template <typename T>
void layerNormBwd(const T *dy, const T *x, const T *w, T *dx, T *dw, T *db,
                  int64_t N, int64_t C, double eps);

/// y = x * rsqrt(mean(x^2) + eps) * w per row. x, y are (N, C); w is (C).
template <typename T>
void rmsNormFwd(const T *x, const T *w, T *y, int64_t N, int64_t C, double eps);

/// Gradients of rmsNormFwd. dy, x, dx are (N, C); w, dw are (C).
template <typename T>
void rmsNormBwd(const T *dy, const T *x, const T *w, T *dx, T *dw, int64_t N,
                int64_t C, double eps);

} // namespace strata::kernels
