//===- Softmax.h - Softmax over the last dim and cross-entropy loss
//--------===//
//
// Both are row-wise over (N, C) / (N, V) and numerically stable (the row max
// is subtracted before exponentiating; sums accumulate in double).
//
// Labels outside [0, V) are IGNORED, like PyTorch's ignore_index (e.g. -100
// for padding): they add nothing to the loss or to dlogits, and the mean is
// over the rows whose label is valid. With no valid row the loss is 0 and
// dlogits is all zeros. With every label valid this is the plain mean over N.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// y = softmax(x) over each row. x, y are (N, C); y may alias x.
template <typename T> void softmaxFwd(const T *x, T *y, int64_t N, int64_t C);

/// dx = y * (dy - sum(dy * y)) per row, given the forward output y.
/// dy, y, dx are (N, C); dx may alias dy.
template <typename T>
void softmaxBwd(const T *dy, const T *y, T *dx, int64_t N, int64_t C);

/// Mean over valid rows of logsumexp(logits[n]) - logits[n, labels[n]].
/// logits is (N, V), labels is (N).
template <typename T>
T crossEntropyFwd(const T *logits, const int32_t *labels, int64_t N, int64_t V);

/// dlogits = dloss * (softmax(logits) - onehot(labels)) / numValid; rows with
/// an ignored label get 0. logits, dlogits are (N, V); labels is (N).
/// Overwrites dlogits, which may alias logits.
template <typename T>
void crossEntropyBwd(T dloss, const T *logits, const int32_t *labels,
                     T *dlogits, int64_t N, int64_t V);

} // namespace strata::kernels
