//===- HfComponents.h - tokenizer.json normalizers, pre-tokenizers, decoders
//===//
//
// The steps of a Hugging Face tokenizer pipeline that strata runs, each read
// from its tokenizer.json object by a parse function whose errors name the
// field (`pre_tokenizer.pretokenizers[0].type`). What is supported, with
// tokenizers 0.15's semantics:
//   normalizer     Prepend, Replace (String or Regex), Sequence, null
//   pre_tokenizer  ByteLevel, Split (Isolated or Removed, not inverted),
//                  Metaspace (prepend_scheme always/first/never), Sequence
//   decoder        ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip,
//                  Sequence
// Anything else is refused with the field's name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/text/SplitRegex.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace re2 {
class RE2;
}

namespace strata::text {

struct Normalizer {
  enum class Kind { Prepend, Replace } kind;
  std::string text;                     // Prepend: the prefix
  std::shared_ptr<const SplitRegex> re; // Replace: the pattern
  std::string content;                  // Replace: the replacement
  void apply(std::string &s) const;
};

struct PreTokenizer {
  enum class Kind { ByteLevel, Split, Metaspace } kind;
  enum class Prepend { Always, First, Never };
  bool addPrefixSpace = false;          // ByteLevel
  std::shared_ptr<const SplitRegex> re; // ByteLevel (use_regex), Split
  bool removeMatches = false;           // Split
  std::string replacement;              // Metaspace
  Prepend prepend = Prepend::Always;    // Metaspace
};

struct Decoder {
  enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip };
  Kind kind;
  std::string from, to;    // Metaspace: replacement; Replace: pattern, content
  bool stripFirst = false; // Metaspace: add_prefix_space
  std::shared_ptr<const SplitRegex> re; // Replace with a Regex pattern
  uint32_t stripChar = 0;               // Strip
  size_t start = 0, stop = 0;           // Strip
  void apply(std::vector<std::string> &tokens) const;
};

/// `v` (the value at `path`) as normalizer steps; null gives none.
llvm::Error parseNormalizer(const llvm::json::Value &v, llvm::StringRef path,
                            std::vector<Normalizer> &out);
llvm::Error parsePreTokenizer(const llvm::json::Value &v, llvm::StringRef path,
                              std::vector<PreTokenizer> &out);
llvm::Error parseDecoder(const llvm::json::Value &v, llvm::StringRef path,
                         std::vector<Decoder> &out);

/// Calls `word` for each pre-token of `text` after `steps` (tokenizers' split
/// semantics: empty pieces vanish). `atStart`: `text` begins the input
/// (Metaspace's prepend_scheme "first").
void preTokenize(llvm::ArrayRef<PreTokenizer> steps, llvm::StringRef text,
                 bool atStart, llvm::function_ref<void(llvm::StringRef)> word);

/// An error at `path`: "path: msg".
llvm::Error fieldError(llvm::StringRef path, const llvm::Twine &msg);

} // namespace strata::text
