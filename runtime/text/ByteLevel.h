//===- ByteLevel.h - GPT-2's byte <-> printable character map ---*- C++ -*-===//
//
// Byte-level BPE works on bytes shown as printable characters: the bytes
// of '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves, the
// other 68 bytes map to U+0100.. in byte order (GPT-2's bytes_to_unicode,
// which Hugging Face's ByteLevel pre-tokenizer and decoder use).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <string>

namespace strata::text {

/// The code point byte `b` is written as.
uint32_t byteToCodePoint(uint8_t b);
/// The byte code point `cp` stands for, or -1 if it stands for none.
int codePointToByte(uint32_t cp);
/// Appends the byte-level form of `bytes` (each byte one character).
void appendByteLevel(llvm::StringRef bytes, std::string &out);

} // namespace strata::text
