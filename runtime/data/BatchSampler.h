//===- BatchSampler.h - Random LM batches, resumable ------------*- C++ -*-===//
//
// nanoGPT's get_batch: each row of a [B,T] batch starts at a uniformly random
// offset i of the token span, tokens = data[i : i+T], labels = data[i+1 :
// i+T+1]. The offset is a pure function of (seed, rank, step, microbatch, row)
// -- a splitmix64 hash, no RNG state -- so any batch can be drawn in any order
// and a resumed run draws exactly the batches the original would have. Its
// whole state is the position (step, microbatch) of the next batch.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/BatchSource.h"
#include "runtime/data/TokenDataset.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>

namespace strata {

struct SamplerConfig {
  int64_t batch = 1;        ///< B: rows per microbatch.
  int64_t seqLen = 1;       ///< T: tokens per row.
  int64_t microbatches = 1; ///< Microbatches per optimizer step.
  uint64_t seed = 0;
  int64_t rank = 0; ///< Data-parallel rank: ranks draw different rows.
};

/// Where a sampler is in its stream: the next batch is (step, microbatch).
struct SamplerState {
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t microbatch = 0;

  /// {"seed": .., "step": .., "microbatch": ..}; the seed is written as a
  /// decimal string because JSON numbers cannot hold every uint64.
  llvm::json::Value toJSON() const;
  static llvm::Expected<SamplerState> fromJSON(const llvm::json::Value &v);
  bool operator==(const SamplerState &o) const {
    return seed == o.seed && step == o.step && microbatch == o.microbatch;
  }
};

class BatchSampler : public BatchSource {
public:
  /// Fails, naming the data, if the span has fewer than seqLen + 1 tokens or
  /// the config is not positive.
  static llvm::Expected<BatchSampler> create(TokenSpan data,
                                             const SamplerConfig &config);

  const SamplerConfig &config() const { return config_; }

  /// Writes batch (step, microbatch) as int32 [B,T] into `tokens` and
  /// `labels` (labels = tokens shifted by one). Does not move the cursor.
  void fill(int64_t step, int64_t microbatch, int32_t *tokens,
            int32_t *labels) const override;
  std::string describe() const override { return data_.describe(); }
  /// The start offset of `row` in batch (step, microbatch).
  int64_t offset(int64_t step, int64_t microbatch, int64_t row) const;

  /// Fills the batch at the cursor and advances it: microbatch + 1, rolling
  /// over to the next step after `microbatches`.
  void next(int32_t *tokens, int32_t *labels);

  SamplerState state() const { return {config_.seed, step_, microbatch_}; }
  /// Moves the cursor to `s`. Fails if `s` was saved with another seed or
  /// names a microbatch past the configured count.
  llvm::Error restore(const SamplerState &s);

private:
  BatchSampler(TokenSpan data, const SamplerConfig &config)
      : data_(std::move(data)), config_(config) {}

  TokenSpan data_;
  SamplerConfig config_;
  int64_t step_ = 0;
  int64_t microbatch_ = 0;
};

} // namespace strata
