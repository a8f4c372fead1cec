//===- SentencePieceTokenizer.h - SentencePiece .model files ----*- C++ -*-===//
//
// A SentencePiece model (BPE or unigram, any normalization) run by Debian's
// libsentencepiece, reached through the shim of spm/SentencePieceShim.h
// (loaded once, on first use): ids equal the Python sentencepiece module's
// encode() and decode(). With special tokens, encode() puts the model's BOS
// first (as Llama's tokenizer does); decode() drops control tokens, as
// SentencePiece's decoder always does.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/text/TextTokenizer.h"

namespace strata::text {

class SentencePieceTokenizer : public TextTokenizer {
public:
  /// Loads the serialized ModelProto `model`; `name` prefixes errors.
  static llvm::Expected<std::unique_ptr<TextTokenizer>>
  fromModel(llvm::StringRef model, llvm::StringRef name);
  ~SentencePieceTokenizer() override;

  llvm::Error encode(llvm::StringRef text, std::vector<int32_t> &out,
                     bool addSpecialTokens) const override;
  llvm::Expected<std::string> decode(llvm::ArrayRef<int32_t> ids,
                                     bool skipSpecialTokens) const override;
  int64_t vocabSize() const override { return vocabSize_; }
  std::optional<int32_t> tokenToId(llvm::StringRef token) const override;
  Format format() const override { return Format::SentencePiece; }

private:
  explicit SentencePieceTokenizer(void *processor) : processor_(processor) {}
  void *processor_; // the shim's SentencePieceProcessor
  int64_t vocabSize_ = 0;
};

} // namespace strata::text
