//===- BpeModel.h - Byte-pair encoding of one pre-tokenized word -*- C++
//-*-===//
//
// The `model` of a Hugging Face tokenizer.json of type BPE, with the
// semantics of tokenizers 0.15 (models/bpe): a word starts as one symbol per
// character (a character missing from the vocabulary becomes its <0xXX>
// byte tokens with byte_fallback, else the unk token, consecutive unks fused
// with fuse_unk, else nothing), then the adjacent pair of lowest merge rank
// is merged, leftmost first, until no pair has a merge.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::text {

class BpeModel {
public:
  struct Options {
    std::optional<std::string> unkToken;
    bool fuseUnk = false;
    bool byteFallback = false;
    /// Words found whole in the vocabulary skip the merges (tokenizers >=
    /// 0.17's ignore_merges, which Llama 3's tokenizer.json sets).
    bool ignoreMerges = false;
  };

  /// `merges` in rank order. Fails, naming the token, if a merge or the unk
  /// token is not in `vocab`.
  static llvm::Expected<BpeModel>
  create(llvm::StringMap<int32_t> vocab,
         llvm::ArrayRef<std::pair<std::string, std::string>> merges,
         Options options);

  /// Appends the ids of `word`.
  void encodeWord(llvm::StringRef word, std::vector<int32_t> &out) const;
  std::optional<int32_t> tokenToId(llvm::StringRef token) const;
  /// The token of `id`, or null if no token has it.
  const std::string *idToToken(int32_t id) const;
  /// One past the largest id.
  int64_t size() const { return int64_t(tokens_.size()); }
  /// The unk token's id, or -1.
  int32_t unkId() const { return unk_; }

private:
  BpeModel() = default;
  /// The id of the single character `ch`, or -1.
  int32_t charId(llvm::StringRef ch, uint32_t cp) const;

  struct Merge {
    int32_t rank, newId;
  };
  llvm::StringMap<int32_t> vocab_;
  std::vector<std::string> tokens_;
  std::vector<bool> hasToken_;
  llvm::DenseMap<uint64_t, Merge> merges_;
  std::vector<int32_t> smallCharIds_; // code point < 2048 -> id or -1
  int32_t byteIds_[256];              // <0xXX> tokens, -1 if absent
  int32_t unk_ = -1;
  Options options_;
};

} // namespace strata::text
