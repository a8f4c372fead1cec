//===- LoadedModel.h - A training checkpoint, ready to generate from
//-------===//
//
// Everything `strata generate` and `strata serve` read from a checkpoint
// written by `strata train` or `strata import-hf`: the model spec and
// tokenizer (if any) stored in its metadata, its parameters bound for decoding
// (ModelWeights), and a decoder over them, cached (default) or the uncached
// reference.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/Tokenizer.h"
#include "runtime/generate/Decoder.h"
#include "runtime/generate/ModelWeights.h"
#include "runtime/io/Checkpoint.h"

#include <memory>
#include <optional>

namespace strata::generate {

struct LoadedModel {
  Checkpoint checkpoint;
  ModelConfig config;
  std::optional<Tokenizer> tokenizer; ///< Set by load() or chooseTokenizer().
  llvm::StringMap<const HostTensor *> params;
  ModelWeights weights;

  /// Reads and checks `path`; errors read `<path>: error: <what>`.
  static llvm::Expected<std::unique_ptr<LoadedModel>>
  load(llvm::StringRef path);

  /// The --tokenizer flag of generate and serve: empty keeps the
  /// checkpoint's (an error when it stores none: import-hf's), else "byte"
  /// or a tokenizer.json / SentencePiece .model, which must fit the model's
  /// vocabulary.
  llvm::Error chooseTokenizer(llvm::StringRef flag, llvm::StringRef path);

  /// A decoder with `slots` sequences: the key/value cache, or with
  /// `cached` false the whole-window graph on `device`.
  llvm::Expected<std::unique_ptr<Decoder>>
  makeDecoder(bool cached, int64_t slots, Device &device) const;
};

} // namespace strata::generate
