//===- Embedding.h - Vocab-parallel embedding lookup and its gradient
//------===//
//
// The table holds rows [vocabStart, vocabStart + V) of the full vocabulary
// (vocabStart = 0 when unsharded). Ids outside that range read as zero rows
// and contribute no gradient: Megatron's VocabParallelEmbedding masking, so
// an all-reduce over the vocab shards yields the full lookup.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace strata::kernels {

/// out[n] = table[ids[n] - vocabStart] if that row is local, else zeros.
/// table is (V, H), ids is (N), out is (N, H).
template <typename T>
void embeddingFwd(const T *table, const int32_t *ids, T *out, int64_t N,
                  int64_t V, int64_t H, int64_t vocabStart = 0);

/// dtable[ids[n] - vocabStart] += dy[n] for the local ids. ACCUMULATES into
/// dtable (V, H); dy is (N, H). Deterministic: each row's sum is in n order.
template <typename T>
void embeddingBwd(const T *dy, const int32_t *ids, T *dtable, int64_t N,
                  int64_t V, int64_t H, int64_t vocabStart = 0);

} // namespace strata::kernels
