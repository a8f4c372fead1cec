//===- Evaluate.h - Logits and held-out loss of a model ---------*- C++ -*-===//
//
// `strata eval`: the forward graph at batch 1 without dropout, with the
// LM head's logits as its output. A text is scored in windows of seq_len
// tokens moved by `stride` (Hugging Face's perplexity recipe): every token
// after the first is predicted once, from the window that gives it the most
// context, and the loss is the mean negative log-likelihood over the real
// vocabulary (Megatron's padding entries are left out of the softmax, as a
// Hugging Face model of the same weights computes it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/Device.h"
#include "runtime/HostTensor.h"
#include "runtime/Executable.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace strata {

/// A model that maps up to seq_len token ids to logits.
class LogitsModel {
public:
  /// `params` maps every parameter name of `config`'s model to a tensor of
  /// its type; the error names a missing or mis-typed one.
  static llvm::Expected<std::unique_ptr<LogitsModel>>
  create(const ModelConfig &config,
         const llvm::StringMap<const HostTensor *> &params, Device &device);

  /// Logits [ids.size(), paddedVocab] (row-major, valid until the next call)
  /// of 1 <= ids.size() <= seq_len ids, each below the vocabulary.
  llvm::Expected<const float *> run(llvm::ArrayRef<int32_t> ids);

  const ModelConfig &config() const { return c_; }

private:
  LogitsModel() = default;
  ModelConfig c_;
  Graph g_;
  std::unique_ptr<Executable> interp_;
  HostTensor tokens_, labels_;
  std::vector<const void *> ins_;
};

struct EvalResult {
  int64_t tokens = 0;  // tokens scored
  int64_t windows = 0; // forward runs
  double loss = 0;     // mean negative log-likelihood (nats)
  double perplexity() const;
};

/// Scores `ids` (at least 2) in windows of seq_len moved by `stride`
/// (1 <= stride <= seq_len).
llvm::Expected<EvalResult> evaluateTokens(LogitsModel &model,
                                          llvm::ArrayRef<int32_t> ids,
                                          int64_t stride);

} // namespace strata
