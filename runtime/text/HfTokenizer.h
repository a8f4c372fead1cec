//===- HfTokenizer.h - Hugging Face tokenizer.json BPE tokenizers -*- C++
//-*-===//
//
// A tokenizer.json whose model is BPE, run the way tokenizers 0.15 runs it:
//  1. added tokens (special or not) are split out of the raw text, leftmost
//     longest first (those with "normalized": true from the normalized text
//     of each remaining piece, after step 2);
//  2. each remaining piece is normalized and pre-tokenized (HfComponents.h);
//  3. each pre-token is encoded by the BPE model (BpeModel.h);
//  4. with special tokens, the post-processor adds its tokens
//     (TemplateProcessing, Bert/RobertaProcessing; ByteLevel adds none).
// Decoding maps ids to tokens (added tokens first) and runs the decoder
// chain, or joins the tokens with spaces if there is none.
// This covers GPT-2 and Llama 3 style byte-level BPE and Llama 2 / Mistral
// style SentencePiece BPE with byte fallback.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/text/BpeModel.h"
#include "runtime/text/HfComponents.h"
#include "runtime/text/TextTokenizer.h"

namespace strata::text {

class HfTokenizer : public TextTokenizer {
public:
  /// Parses tokenizer.json `content`; errors read "<name>: error: <field>:
  /// <what>".
  static llvm::Expected<std::unique_ptr<TextTokenizer>>
  fromJSON(llvm::StringRef content, llvm::StringRef name);

  llvm::Error encode(llvm::StringRef text, std::vector<int32_t> &out,
                     bool addSpecialTokens) const override;
  llvm::Expected<std::string> decode(llvm::ArrayRef<int32_t> ids,
                                     bool skipSpecialTokens) const override;
  int64_t vocabSize() const override;
  std::optional<int32_t> tokenToId(llvm::StringRef token) const override;
  Format format() const override { return Format::HfJson; }

  struct AddedToken {
    std::string content;
    int32_t id;
    bool special, normalized, lstrip, rstrip;
  };

private:
  explicit HfTokenizer(BpeModel model) : model_(std::move(model)) {}
  llvm::Error parse(const llvm::json::Object &root);
  llvm::Error parseAddedTokens(const llvm::json::Object &root);
  llvm::Error parsePostProcessor(const llvm::json::Value &v,
                                 llvm::StringRef path);
  /// Calls `piece(text, offset, -1)` for the text between added tokens of
  /// `normalized` and `piece("", offset, id)` for each added token.
  void splitAdded(
      llvm::StringRef text, bool normalized,
      llvm::function_ref<void(llvm::StringRef, size_t, int32_t)> piece) const;

  BpeModel model_;
  std::vector<AddedToken> added_;
  llvm::DenseMap<int32_t, uint32_t> addedById_; // id -> index into added_
  /// Per first byte: indices into added_ of the tokens matched in raw
  /// ([0]) and normalized ([1]) text, longest first.
  std::vector<std::vector<uint32_t>> byFirstByte_[2];
  std::vector<Normalizer> normalizers_;
  std::vector<PreTokenizer> preTokenizers_;
  std::vector<Decoder> decoders_;
  bool hasDecoder_ = false; // without one, decode joins tokens with spaces
  /// The single-sequence template: ids, with -1 standing for the sequence.
  std::vector<int32_t> template_;
  int64_t vocabSize_ = 0;
};

} // namespace strata::text
