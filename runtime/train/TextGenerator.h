//===- TextGenerator.h - Sampling text from a trained model
//----------------===//
//
// Autoregressive sampling with temperature and top-k, as nanoGPT's sample.py:
// each new token runs the forward graph (batch 1) on the last `seq` tokens of
// the context and samples from the logits at the last position.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/Device.h"
#include "runtime/HostTensor.h"
#include "runtime/data/Tokenizer.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

struct SampleOptions {
  int64_t maxNewTokens = 200;
  double temperature = 0.8; // > 0
  int64_t topK = 40;        // 0: no top-k
  uint64_t seed = 1337;
};

/// Continues `prompt` (empty: starts from token 0, nanoGPT's newline for
/// Shakespeare). `params` maps parameter names to tensors of the model.
/// Returns the generated text (without the prompt).
llvm::Expected<std::string>
generateText(const ModelConfig &config,
             const llvm::StringMap<const HostTensor *> &params,
             const Tokenizer &tokenizer, llvm::StringRef prompt,
             const SampleOptions &options, Device &device);

} // namespace strata
