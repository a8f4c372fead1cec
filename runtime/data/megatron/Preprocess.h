//===- Preprocess.h - Text/JSONL corpus -> Megatron .bin/.idx ----*- C++
//-*-===//
//
// What Megatron-LM's tools/preprocess_data.py does, for `strata preprocess`:
// every document of the input is tokenized (by `workers` threads; the output
// order is the input order whatever the count) and written to
// PREFIX_KEY_document.bin/.idx (runtime/data/megatron/IndexedDataset.h) in
// the smallest dtype that holds the vocabulary. Inputs:
//  - .jsonl / .json: one JSON object per line; the document is the string
//    under the key (a list of strings is one document of several sequences,
//    as preprocess_data.py treats sentence-split input); blank lines are
//    skipped; a malformed line is an error naming file:line.
//  - .txt: documents are paragraphs: runs of lines separated by one or more
//    blank lines, each paragraph's text keeping its line breaks (the blank
//    separator lines are dropped).
// Like preprocess_data.py, an EOD token is appended to every non-empty
// document when asked, and a document with no tokens adds a document-index
// entry but no sequence. The tokenizer is recorded next to the output
// (PREFIX_KEY_document.strata-tokenizer.json) so training can decode
// samples and check the vocabulary.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/Tokenizer.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace strata::megatron {

struct PreprocessOptions {
  std::string input; ///< .jsonl, .json or .txt
  std::string jsonKey = "text";
  std::string outputPrefix; ///< files are OUTPUT_PREFIX_KEY_document.*
  /// The id appended after every non-empty document; none: nothing appended.
  std::optional<int32_t> eod;
  int workers = 1;
};

struct PreprocessProgress {
  int64_t documents = 0;
  int64_t sequences = 0;
  int64_t tokens = 0;
  uint64_t bytes = 0;      ///< input bytes consumed
  uint64_t totalBytes = 0; ///< input size
  double seconds = 0;
};

/// The dataset prefix preprocess() writes: OUTPUT_PREFIX_KEY_document.
std::string outputDatasetPrefix(const PreprocessOptions &o);
/// The tokenizer file recorded next to dataset `prefix`.
std::string tokenizerSidecarPath(llvm::StringRef prefix);

/// The end-of-document id of `tok`: a tokenizer file's EOS token (Megatron's
/// HuggingFaceTokenizer.eod); none for the char and byte tokenizers, whose
/// vocabularies hold only text.
std::optional<int32_t> endOfDocumentId(const Tokenizer &tok);

/// Tokenizes `o.input` and writes the dataset; `progress` is called about
/// once a second and once at the end. Nothing is left half-written on error.
llvm::Expected<PreprocessProgress>
preprocess(const PreprocessOptions &o, const Tokenizer &tok,
           llvm::function_ref<void(const PreprocessProgress &)> progress);

/// The tokenizer recorded next to each prefix (they must agree), or none
/// if no prefix has one (a dataset Megatron's own tool wrote).
llvm::Expected<std::optional<Tokenizer>>
recordedTokenizer(llvm::ArrayRef<std::string> prefixes);

} // namespace strata::megatron
