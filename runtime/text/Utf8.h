//===- Utf8.h - UTF-8 helpers of the text tokenizers ------------*- C++ -*-===//
//
// Validation, code point iteration and lossy decoding as Rust's
// String::from_utf8_lossy does it (one U+FFFD per maximal invalid subpart),
// which Hugging Face tokenizers' decoders use.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace strata::text {

/// Fails, naming the byte offset and value, unless `s` is valid UTF-8
/// (shortest forms, no surrogates, at most U+10FFFF).
llvm::Error checkUtf8(llvm::StringRef s);
/// Bytes of the UTF-8 sequence starting with `lead` (1 for a stray byte).
unsigned utf8Length(char lead);
/// The code point at `s[pos]` of valid UTF-8 `s`; advances `pos` past it.
uint32_t nextCodePoint(llvm::StringRef s, size_t &pos);
/// Appends the UTF-8 encoding of `cp`.
void appendUtf8(uint32_t cp, std::string &out);
/// `bytes` as UTF-8, each maximal invalid subpart replaced by U+FFFD.
std::string utf8Lossy(llvm::StringRef bytes);
/// Unicode White_Space (what Rust's char::is_whitespace and Oniguruma's
/// \s match).
bool isWhitespace(uint32_t cp);

} // namespace strata::text
