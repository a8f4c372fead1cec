//===- Attention.h - Scaled dot-product attention with GQA/MQA
//-------------===//
//
// out = softmax(scale * q k^T + causal mask) v per (batch, query head), with
// query head h reading kv head h / (Hq / Hkv): Hkv == Hq is multi-head,
// 1 < Hkv < Hq grouped-query, Hkv == 1 multi-query attention. Tensors keep the
// [B, S, heads, D] layout of the projections (no transposes needed).
// The backward recomputes the probabilities; nothing is saved in between.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// Sizes of an attention call. Hq must be a multiple of Hkv.
struct AttentionDims {
  int64_t B = 0, S = 0, Hq = 0, Hkv = 0, D = 0;
};

/// q is (B, S, Hq, D), k and v are (B, S, Hkv, D), out is (B, S, Hq, D).
/// Causal masks key j > query i; a sliding `window` > 0 (Mistral) also masks
/// keys j <= i - window, so each query sees at most `window` keys.
/// Parallel over (b, query head).
template <typename T>
void attentionFwd(const T *q, const T *k, const T *v, T *out,
                  const AttentionDims &dims, bool causal, double scale,
                  int64_t window = 0);

/// Gradients of attentionFwd; overwrites dq (B, S, Hq, D) and dk, dv
/// (B, S, Hkv, D). dk / dv sum over the query heads sharing each kv head, in
/// a fixed order (the result does not depend on the thread count).
template <typename T>
void attentionBwd(const T *dout, const T *q, const T *k, const T *v, T *dq,
                  T *dk, T *dv, const AttentionDims &dims, bool causal,
                  double scale, int64_t window = 0);

} // namespace strata::kernels
