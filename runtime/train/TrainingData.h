//===- TrainingData.h - The batches a training run draws --------*- C++ -*-===//
//
// Picks the run's batch sources: random windows of one tokenized text file
// (--data, runtime/data/BatchSampler.h), or Megatron's GPT samples of
// blended .bin/.idx datasets (--data-path and --split,
// runtime/data/megatron/MegatronBatchSource.h). Either way a batch is a pure
// function of (seed, step, microbatch), so resumed runs draw the same data.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/data/BatchSource.h"
#include "runtime/data/Tokenizer.h"
#include "runtime/train/TrainingRun.h"

#include "llvm/Support/Error.h"

#include <memory>

namespace strata {

struct TrainingData {
  std::unique_ptr<BatchSource> train;
  /// Null when the run never evaluates and the data has no valid split.
  std::unique_ptr<BatchSource> valid;
};

/// The tokenizer of the run's data; `kind` is the spec's ("char"/"byte").
llvm::Expected<Tokenizer> dataTokenizer(const RunOptions &opts,
                                        llvm::StringRef kind);

/// Opens the train and validation batches for model `cfg`.
llvm::Expected<TrainingData> openTrainingData(const RunOptions &opts,
                                              const ModelConfig &cfg,
                                              const Tokenizer &tokenizer);

} // namespace strata
