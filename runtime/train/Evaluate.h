//===- Evaluate.h - Logits and held-out loss of a model ---------*- C++ -*-===//
//
// `strata eval`: a LogitsModel (runtime/generate/LogitsModel.h) scores a
// text in windows of seq_len
// tokens moved by `stride` (Hugging Face's perplexity recipe): every token
// after the first is predicted once, from the window that gives it the most
// context, and the loss is the mean negative log-likelihood over the real
// vocabulary (Megatron's padding entries are left out of the softmax, as a
// Hugging Face model of the same weights computes it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/generate/LogitsModel.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace strata {

struct EvalResult {
  int64_t tokens = 0;  // tokens scored
  int64_t windows = 0; // forward runs
  double loss = 0;     // mean negative log-likelihood (nats)
  double perplexity() const;
};

/// Scores `ids` (at least 2) in windows of seq_len moved by `stride`
/// (1 <= stride <= seq_len).
llvm::Expected<EvalResult>
evaluateTokens(LogitsModel &model, llvm::ArrayRef<int32_t> ids, int64_t stride);

} // namespace strata
