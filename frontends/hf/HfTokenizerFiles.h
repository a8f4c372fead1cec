//===- HfTokenizerFiles.h - A checkpoint's tokenizer as HF files -*- C++
//-*-===//
//
// The tokenizer files export-hf writes next to config.json so that
// transformers' AutoTokenizer.from_pretrained loads the tokenizer a
// checkpoint embeds (Tokenizer::toJSON's "file" form):
//   - a tokenizer.json goes back as it was imported;
//   - a SentencePiece model is written as tokenizer.model (its bytes) with a
//     tokenizer_config.json for LlamaTokenizer / LlamaTokenizerFast: the
//     BOS, EOS, UNK (and PAD) pieces at the model's own ids, BOS added as
//     the SentencePiece encoder adds it, and `legacy` so the slow tokenizer
//     encodes exactly as SentencePiece does.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace strata {

/// One file of an exported model directory.
struct HfTokenizerFile {
  std::string name, content;
};

/// The files and the notes (e.g. "LlamaTokenizerFast assumes ...") for a
/// checkpoint's tokenizer description `tok`.
struct HfTokenizerFiles {
  std::vector<HfTokenizerFile> files;
  std::vector<std::string> warnings;
};

/// The files transformers loads for `tok` ({"kind": "file", "file": NAME,
/// "content" or "content_base64"}). Errors name the tokenizer file and what
/// is wrong with it (not base64, not a SentencePiece model, no "file").
llvm::Expected<HfTokenizerFiles>
makeHfTokenizerFiles(const llvm::json::Object &tok);

/// tokenizer_config.json for the SentencePiece model `model` (its bytes);
/// `name` prefixes errors and warnings.
llvm::Expected<llvm::json::Object>
makeLlamaTokenizerConfig(llvm::StringRef model, llvm::StringRef name,
                         std::vector<std::string> &warnings);

} // namespace strata
