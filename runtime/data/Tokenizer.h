//===- Tokenizer.h - The tokenizers of training and generation --*- C++ -*-===//
//
// The tokenizer a run trains and generates with, one of:
//  - char: the vocabulary is the sorted set of Unicode code points of a
//    training text (nanoGPT's shakespeare_char); text is decoded as UTF-8.
//  - byte: the 256 byte values, ids equal to bytes; any text encodes.
//  - file: a Hugging Face tokenizer.json (BPE) or a SentencePiece .model
//    (runtime/text); the tokenizer keeps the file's bytes.
// A tokenizer serializes to JSON so a checkpoint can decode generated tokens
// without the data file; a file tokenizer's JSON embeds the file, so a
// checkpoint stays self-contained.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {

namespace text {
class TextTokenizer;
}

class Tokenizer {
public:
  enum class Kind : uint8_t { Char, Byte, File };

  /// The byte-level tokenizer: vocabulary of 256, token id = byte value.
  static Tokenizer byteLevel();
  /// A character-level tokenizer whose vocabulary is the sorted set of code
  /// points in `text`. Fails if `text` is empty or not valid UTF-8.
  static llvm::Expected<Tokenizer> charLevel(llvm::StringRef text);
  /// A tokenizer.json or SentencePiece .model file (told apart by content).
  /// Errors name the file and the unsupported or malformed field.
  static llvm::Expected<Tokenizer> fromFile(llvm::StringRef path);
  /// The same from the file's bytes; `fileName` is kept for messages.
  static llvm::Expected<Tokenizer> fromFileContent(llvm::StringRef fileName,
                                                   std::string content);
  /// Reads the form written by toJSON().
  static llvm::Expected<Tokenizer> fromJSON(const llvm::json::Value &v);

  /// {"kind": "char", "vocab": "<the characters, in id order>"},
  /// {"kind": "byte"} or {"kind": "file", "file": NAME, and "content" (a
  /// tokenizer.json's text) or "content_base64" (a .model's bytes)}.
  llvm::json::Value toJSON() const;

  Kind kind() const { return kind_; }
  /// "char", "byte" or "file-<hash of the file>"; used in token cache file
  /// names.
  llvm::StringRef name() const;
  /// The file tokenizer (kind File only), for its special tokens.
  const text::TextTokenizer *textTokenizer() const { return text_.get(); }
  /// Special token ids (kind File only; the char and byte tokenizers have
  /// none).
  std::optional<int32_t> bosId() const;
  std::optional<int32_t> eosId() const;
  int64_t vocabSize() const;
  /// Code points in id order (char tokenizer only; empty for byte).
  llvm::ArrayRef<uint32_t> codePoints() const { return vocab_; }
  /// A hash of the kind and vocabulary: equal tokenizers encode equally.
  uint64_t fingerprint() const;

  /// Appends the ids of `text` to `out`. Fails, naming the character and its
  /// offset, on a character outside the vocabulary or on invalid UTF-8.
  llvm::Error encode(llvm::StringRef text, std::vector<int32_t> &out) const;
  /// The text of `ids`. Fails on an id outside the vocabulary.
  llvm::Expected<std::string> decode(llvm::ArrayRef<int32_t> ids) const;

  bool operator==(const Tokenizer &o) const {
    return kind_ == o.kind_ && vocab_ == o.vocab_ &&
           (kind_ != Kind::File || *content_ == *o.content_);
  }
  bool operator!=(const Tokenizer &o) const { return !(*this == o); }

private:
  explicit Tokenizer(Kind kind) : kind_(kind) {}
  /// Builds the inverse maps from vocab_.
  void index();
  /// The file kind's JSON (TokenizerFile.cpp).
  static llvm::Expected<Tokenizer> fileFromJSON(const llvm::json::Object &o);
  llvm::json::Value fileToJSON() const;

  Kind kind_;
  std::vector<uint32_t> vocab_;           // char: id -> code point
  std::array<int32_t, 128> asciiIds_{};   // char: ASCII code point -> id or -1
  llvm::DenseMap<uint32_t, int32_t> ids_; // char: other code points -> id
  // file: the loaded tokenizer, the file's bytes and name, name()
  std::shared_ptr<const text::TextTokenizer> text_;
  std::shared_ptr<const std::string> content_;
  std::string fileName_, name_;
};

/// Decodes one UTF-8 sequence at the front of `s` into `cp` and returns its
/// length, or 0 if `s` does not start with a valid, shortest-form sequence.
unsigned decodeUTF8(llvm::StringRef s, uint32_t &cp);
/// Appends the UTF-8 encoding of code point `cp` to `out`.
void appendUTF8(uint32_t cp, std::string &out);

} // namespace strata
