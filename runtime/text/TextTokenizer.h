//===- TextTokenizer.h - Subword tokenizers read from files -----*- C++ -*-===//
//
// The interface of the tokenizers strata reads from files: Hugging Face
// `tokenizer.json` BPE models (HfTokenizer.h) and SentencePiece `.model`
// files (SentencePieceTokenizer.h). loadTokenizer() tells the two apart by
// content. runtime/data/Tokenizer wraps one of these next to its char and
// byte tokenizers, which is what training, datasets and generation use.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata::text {

/// Ids of the special tokens a tokenizer knows; -1 where it has none.
struct SpecialIds {
  int32_t bos = -1, eos = -1, pad = -1, unk = -1;
};

class TextTokenizer {
public:
  enum class Format : uint8_t { HfJson, SentencePiece };

  virtual ~TextTokenizer();

  /// Appends the ids of `text` (UTF-8; the error names the offset of an
  /// invalid byte). `addSpecialTokens` adds what the tokenizer adds around a
  /// sequence (the tokenizer.json post-processor, e.g. Llama's BOS; the BOS
  /// of a SentencePiece model), as Hugging Face's encode() does by default.
  virtual llvm::Error encode(llvm::StringRef text, std::vector<int32_t> &out,
                             bool addSpecialTokens = false) const = 0;
  /// The text of `ids`; fails on an id outside the vocabulary. Incomplete
  /// UTF-8 from byte tokens decodes to U+FFFD, as Hugging Face's does.
  virtual llvm::Expected<std::string>
  decode(llvm::ArrayRef<int32_t> ids, bool skipSpecialTokens = false) const = 0;
  /// One past the largest id (the embedding rows a model needs).
  virtual int64_t vocabSize() const = 0;
  /// The id of the token spelled `token` (a vocabulary or added token).
  virtual std::optional<int32_t> tokenToId(llvm::StringRef token) const = 0;
  const SpecialIds &specialIds() const { return special_; }
  virtual Format format() const = 0;

protected:
  SpecialIds special_;
};

/// Reads a tokenizer.json (content starting with '{') or a SentencePiece
/// model from `content`; `name` (a file name) prefixes errors, which name the
/// unsupported or malformed field.
llvm::Expected<std::unique_ptr<TextTokenizer>>
loadTokenizer(llvm::StringRef content, llvm::StringRef name);
/// Reads the file at `path` and calls loadTokenizer.
llvm::Expected<std::unique_ptr<TextTokenizer>>
loadTokenizerFile(llvm::StringRef path);

} // namespace strata::text
