//===- HfConfig.h - Hugging Face config.json <-> strata model spec -*- C++
//-*-===//
//
// Maps a transformers `config.json` (GPT-2: model_type "gpt2"; Llama 1/2/3
// and CodeLlama: "llama"; Mistral: "mistral", a Llama with sliding-window
// attention; Falcon: "falcon") to a strata ModelSpec, and a spec back to a
// config.json that transformers' from_pretrained loads. Every key of the
// config is either mapped, checked against the one value strata implements,
// or on a short documented list of keys that do not change the model
// (versions, token ids, cache flags); any other key, and any unsupported
// value, is an error naming the field. docs/hf.md lists them all.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace strata {

/// What import-hf needs beyond config.json.
struct HfImportOptions {
  /// Megatron vocab padding of the imported spec.
  int64_t vocabMultiple = 128;
  /// Sequence length for families without a position table (0: the
  /// config's max_position_embeddings).
  int64_t seqLen = 0;
};

/// A config.json read into a spec.
struct HfModelConfig {
  pb::ModelSpec spec;
  /// Keys kept for export that strata does not use (token ids,
  /// max_position_embeddings, pretraining_tp): stored in the checkpoint's
  /// meta "hf" so export-hf writes them back.
  llvm::json::Object passthrough;
  /// Notes for the user (a dropout strata does not model, ...).
  std::vector<std::string> warnings;
};

/// Reads config.json (`path` names it in errors, which read
/// `<path>: field "<key>": <what> (<why>; <fix>)`).
llvm::Expected<HfModelConfig> parseHfConfig(const llvm::json::Object &config,
                                            llvm::StringRef path,
                                            const HfImportOptions &options);

/// The config.json of `c` (with `passthrough` keys restored); fails for a
/// model transformers has no config for.
llvm::Expected<llvm::json::Object>
makeHfConfig(const ModelConfig &c, const llvm::json::Object &passthrough);

} // namespace strata
