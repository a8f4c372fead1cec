//===- SplitRegex.h - Pre-tokenizer regexes on RE2 --------------*- C++ -*-===//
//
// Hugging Face tokenizers match pre-tokenizer patterns with Oniguruma; strata
// matches them with RE2 (Debian's libre2), which has Unicode classes but no
// lookaround. Two rewrites keep Oniguruma's results:
//  - \s, \S, \d, \w become their Unicode (Oniguruma) classes; RE2's are
//    ASCII-only.
//  - A pattern ending in `|\s+(?!\S)|\s+` (GPT-2's, Llama 3's) ends in `|\s+`
//    instead, and a match of that last alternative that is followed by a
//    non-space and longer than one character gives back its last character,
//    as the lookahead would: `\s+(?!\S)` leaves the space before a word to
//    the word. Whether a match came from the earlier alternatives is checked
//    by matching them alone, anchored at its start.
// Any other lookaround is refused (RE2 does not compile it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace re2 {
class RE2;
}

namespace strata::text {

/// GPT-2's pre-tokenizer pattern (the ByteLevel pre-tokenizer's).
extern const char *const kGpt2Pattern;

class SplitRegex {
public:
  /// Compiles an Oniguruma-syntax `pattern`; the error says why RE2 cannot.
  static llvm::Expected<std::unique_ptr<SplitRegex>>
  create(llvm::StringRef pattern);
  ~SplitRegex();

  /// Calls `piece(text, isMatch)` for each match and each non-empty gap
  /// between matches of `text` (valid UTF-8), in order; empty matches are
  /// skipped.
  void split(llvm::StringRef text,
             llvm::function_ref<void(llvm::StringRef, bool)> piece) const;

private:
  SplitRegex() = default;
  std::unique_ptr<re2::RE2> re_;
  /// The alternatives before the lookahead tail, when the tail was rewritten.
  std::unique_ptr<re2::RE2> prefix_;
};

} // namespace strata::text
