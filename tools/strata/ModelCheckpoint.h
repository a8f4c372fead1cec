//===- ModelCheckpoint.h - A checkpoint's model, for eval and export -----===//
//
// `strata eval` and `strata export-hf` read a checkpoint written by `strata
// train` or `strata import-hf`: its model spec (meta "spec"), its parameters
// (tensors named as the graph's parameter inputs; optimizer state is
// ignored), its tokenizer when it has one, and import-hf's extra
// Hugging Face config keys (meta "hf").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/data/Tokenizer.h"
#include "runtime/io/Checkpoint.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace strata {

struct ModelCheckpoint {
  Checkpoint ckpt;
  ModelConfig config;
  /// Tensors by name (pointing into `ckpt`, so not copyable).
  llvm::StringMap<const HostTensor *> params;
  /// The checkpoint's tokenizer, if it stores one.
  std::optional<Tokenizer> tokenizer;

  ModelCheckpoint() = default;
  ModelCheckpoint(const ModelCheckpoint &) = delete;
  ModelCheckpoint &operator=(const ModelCheckpoint &) = delete;
};

/// Loads `path`; errors read `<path>: <what>`.
llvm::Expected<std::unique_ptr<ModelCheckpoint>>
loadModelCheckpoint(llvm::StringRef path);

} // namespace strata
