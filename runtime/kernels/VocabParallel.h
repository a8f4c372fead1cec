//===- VocabParallel.h - Vocab-parallel cross-entropy pieces
//----------------===//
//
// A rank holding columns [c0, c0 + C) of the logits (vocab-parallel LM head)
// computes its share of the cross-entropy without the other columns: the
// target logit where it owns the label (others contribute 0 to the
// all-reduce) and the one-hot rows of its columns for the gradient. With
// c0 = 0 and C the full vocab they are the unsharded operations.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// out[n] = x[n, labels[n] - c0] if c0 <= labels[n] < c0 + C, else 0.
/// x is (N, C), labels and out are (N).
template <typename T>
void pickLabel(const T *x, const int32_t *labels, T *out, int64_t N, int64_t C,
               int64_t c0 = 0);

/// out[n, c] = 1 if labels[n] == c0 + c, else 0. out is (N, C).
template <typename T>
void oneHot(const int32_t *labels, T *out, int64_t N, int64_t C,
            int64_t c0 = 0);

} // namespace strata::kernels
