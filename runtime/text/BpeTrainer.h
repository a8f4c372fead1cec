//===- BpeTrainer.h - Training byte-level BPE tokenizers --------*- C++ -*-===//
//
// Trains a GPT-2 style byte-level BPE and writes it as a tokenizer.json that
// Hugging Face tokenizers loads. It does what tokenizers' BpeTrainer does
// with ByteLevel pre-tokenization and the full byte alphabet:
//  - text is read line by line (line ends kept, as tokenizers reads files)
//    and split by GPT-2's pattern into words, counted;
//  - ids: the special tokens, then the 256 byte characters in code point
//    order, then one per merge;
//  - each step merges the pair with the highest count over all words (each
//    word weighted by its count), ties going to the smallest (left id,
//    right id), every non-overlapping occurrence left to right, until the
//    vocabulary has the requested size or no pair is left.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::text {

class BpeTrainer {
public:
  /// `specialTokens` get the first ids, in order, and are added tokens of
  /// the result (split out of text before BPE).
  BpeTrainer(int64_t vocabSize, std::vector<std::string> specialTokens);

  /// Counts the words of `text`; fails on invalid UTF-8.
  llvm::Error addText(llvm::StringRef text);
  /// Learns the merges and returns the tokenizer.json. Fails if the
  /// vocabulary size is below the special tokens plus 256 bytes.
  llvm::Expected<std::string> train() const;

private:
  int64_t vocabSize_;
  std::vector<std::string> specials_;
  llvm::StringMap<uint64_t> wordCounts_;
};

} // namespace strata::text
