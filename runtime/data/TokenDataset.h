//===- TokenDataset.h - Tokenized text, cached and mapped -------*- C++ -*-===//
//
// A text file is tokenized once and cached next to it (or in a cache
// directory) as `<file>.<tokenizer>.tokens`:
//
//   offset  0  magic "STRATATK"
//           8  u32 format version (1)
//          12  u32 bytes per token: 2 (vocab <= 65536) or 4
//          16  u64 token count
//          24  u64 key: hash of the text's size and mtime and the tokenizer
//          32  zeros up to 64, then the tokens, little-endian
//
// A cache whose key, size or header does not match is rebuilt. The cache is
// memory-mapped; splits follow nanoGPT: the first 90% of tokens train, the
// rest validate.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/Tokenizer.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace strata {

/// Builds the tokenizer named `kind` for a text file: "char" (the set of
/// characters in the file), "byte", or else the path of a tokenizer.json or
/// SentencePiece .model file.
llvm::Expected<Tokenizer> makeTokenizer(llvm::StringRef kind,
                                        llvm::StringRef textPath);

namespace detail {
/// A mapped token file; shared by a dataset and the spans that view it.
struct TokenStore {
  std::string textPath;
  std::string cachePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  const uint8_t *tokens = nullptr;
  unsigned tokenBytes = 0;
  int64_t count = 0;
};
} // namespace detail

/// A read-only run of tokens. Keeps its token file mapped while alive.
class TokenSpan {
public:
  TokenSpan() = default;
  int64_t size() const { return size_; }
  /// Token i of the span.
  int32_t operator[](int64_t i) const;
  /// out[k] = (*this)[begin + k] for k < n.
  void copy(int64_t begin, int64_t n, int32_t *out) const;
  /// "<text file> (train split)" and the like, for messages.
  std::string describe() const;

private:
  friend class TokenDataset;
  TokenSpan(std::shared_ptr<const detail::TokenStore> store, int64_t begin,
            int64_t size, const char *what)
      : store_(std::move(store)), begin_(begin), size_(size), what_(what) {}

  std::shared_ptr<const detail::TokenStore> store_;
  int64_t begin_ = 0;
  int64_t size_ = 0;
  const char *what_ = "";
};

class TokenDataset {
public:
  /// What open() did with the cache file.
  enum class CacheStatus { Created, Reused, Rebuilt };

  /// Opens the tokens of `textPath` under `tokenizer`, building the cache if
  /// it is missing or stale. `cacheDir` empty means the text's directory.
  static llvm::Expected<TokenDataset> open(llvm::StringRef textPath,
                                           const Tokenizer &tokenizer,
                                           llvm::StringRef cacheDir = "");
  /// The cache file open() uses for these arguments.
  static std::string cachePath(llvm::StringRef textPath,
                               const Tokenizer &tokenizer,
                               llvm::StringRef cacheDir = "");

  const std::string &textPath() const { return store_->textPath; }
  const std::string &cachePath() const { return store_->cachePath; }
  CacheStatus cacheStatus() const { return status_; }
  int64_t size() const { return store_->count; }
  /// Bytes per token in the cache file (2 or 4).
  unsigned tokenBytes() const { return store_->tokenBytes; }

  TokenSpan all() const;
  /// The first 90% of the tokens (nanoGPT's `int(n * 0.9)`).
  TokenSpan train() const;
  /// The remaining 10%.
  TokenSpan val() const;

private:
  TokenDataset(std::shared_ptr<const detail::TokenStore> store,
               CacheStatus status)
      : store_(std::move(store)), status_(status) {}

  std::shared_ptr<const detail::TokenStore> store_;
  CacheStatus status_;
};

} // namespace strata
