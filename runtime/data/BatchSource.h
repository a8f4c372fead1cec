//===- BatchSource.h - Where training batches come from ---------*- C++ -*-===//
//
// The face a training run draws batches through: a [B,T] batch of tokens and
// next-token labels is a pure function of its position (step, microbatch),
// so batches can be drawn in any order and a resumed run draws exactly the
// batches the original would have. Two sources implement it: BatchSampler
// (random windows of one tokenized text file, nanoGPT's get_batch) and
// megatron::MegatronBatchSource (Megatron's GPT samples of blended .bin/.idx
// datasets).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace strata {

class BatchSource {
public:
  virtual ~BatchSource() = default;
  /// Writes batch (step, microbatch) as int32 [B,T] into `tokens` and
  /// `labels` (labels = tokens shifted by one).
  virtual void fill(int64_t step, int64_t microbatch, int32_t *tokens,
                    int32_t *labels) const = 0;
  /// The first problem a fill() met since the last call (a token outside
  /// the vocabulary, a sample past the planned count), if any; that fill
  /// wrote zeros in its place.
  virtual llvm::Error takeError() const { return llvm::Error::success(); }
  /// What the batches are drawn from, for messages.
  virtual std::string describe() const = 0;
};

} // namespace strata
