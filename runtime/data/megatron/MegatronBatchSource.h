//===- MegatronBatchSource.h - Training batches from Megatron data -*- C++
//-*-===//
//
// `strata train --data-path "0.7 P1 0.3 P2" --split 969,30,1`: the train and
// valid splits of a blend (BlendedDataset.h), sized as Megatron-LM's
// pretraining sizes them (train: steps x global batch samples; valid:
// (steps / eval_every + 1) x eval_iters x global batch), with the run's seed
// as Megatron's --seed. Row r of microbatch m of step s is sample
// (s * microbatches + m) * B + r, the order in which Megatron's
// MegatronPretrainingSampler hands out consecutive samples, so a resumed
// run draws the same samples. Tokens are checked against the vocabulary as
// they are drawn.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/BatchSource.h"
#include "runtime/data/Tokenizer.h"
#include "runtime/data/megatron/BlendedDataset.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <mutex>
#include <string>

namespace strata::megatron {

struct MegatronDataConfig {
  std::string blend; ///< Megatron's --data-path
  std::string split = "969,30,1";
  int64_t batch = 1; ///< rows per microbatch (over all dp ranks)
  int64_t seqLen = 1;
  int64_t microbatches = 1; ///< per optimizer step
  int64_t steps = 1;
  int64_t evalEvery = 0; ///< 0: no validation split is built
  int64_t evalIters = 1;
  uint64_t seed = 0; ///< Megatron's --seed (must fit 32 bits)
  int64_t vocabSize = 0;
};

class MegatronBatchSource : public BatchSource {
public:
  MegatronBatchSource(BlendedSplit split, int64_t batch, int64_t seqLen,
                      int64_t microbatches, int64_t vocabSize);
  void fill(int64_t step, int64_t microbatch, int32_t *tokens,
            int32_t *labels) const override;
  llvm::Error takeError() const override;
  std::string describe() const override { return split_.describe(); }
  const BlendedSplit &split() const { return split_; }

private:
  BlendedSplit split_;
  int64_t batch_, seqLen_, microbatches_, vocab_;
  mutable std::mutex mu_;
  mutable std::string error_;
};

struct MegatronSources {
  std::unique_ptr<MegatronBatchSource> train;
  std::unique_ptr<MegatronBatchSource> valid; ///< null without validation
};

/// Builds the train and (with evalEvery > 0) valid splits of `c.blend`.
llvm::Expected<MegatronSources> openMegatronData(const MegatronDataConfig &c);

/// The tokenizer of the blend's datasets: the one strata preprocess recorded
/// next to them, else `kind` ("byte" or a tokenizer file; "char" needs a
/// recorded vocabulary).
llvm::Expected<Tokenizer> blendTokenizer(llvm::StringRef blend,
                                         llvm::StringRef kind);

} // namespace strata::megatron
