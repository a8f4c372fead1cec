//===- IndexedDataset.h - Megatron's MMIDIDX .bin/.idx token files -*- C++
//-*-===//
//
// The on-disk format of Megatron-LM's IndexedDataset
// (megatron/core/datasets/indexed_dataset.py, _IndexWriter/_IndexReader;
// checked against NVIDIA/Megatron-LM commit 00caa53), all little-endian:
//
//   PREFIX.idx  offset 0   9 bytes  "MMIDIDX\x00\x00"
//                      9   u64      version, 1
//                     17   u8       dtype code of the tokens (table below)
//                     18   u64      S, the sequence count
//                     26   u64      D, the document-index count (documents + 1)
//                     34   i32[S]   sequence lengths, in tokens
//                          i64[S]   sequence pointers, byte offsets into .bin
//                          i64[D]   document index: document k is sequences
//                                   [doc[k], doc[k+1]); doc[0] = 0, doc[D-1] =
//                                   S
//                          (i8[S]   sequence modes, multimodal files only)
//   PREFIX.bin  the tokens of every sequence, back to back, in that dtype.
//
// Both files are memory-mapped; nothing is read until a sample asks for it,
// so a corpus larger than memory works. open() checks every field and names
// the file and field it rejects.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::megatron {

/// Megatron's DType codes (indexed_dataset.py, class DType).
enum class DType : uint8_t {
  UInt8 = 1,
  Int8 = 2,
  Int16 = 3,
  Int32 = 4,
  Int64 = 5,
  Float64 = 6,
  Float32 = 7,
  UInt16 = 8,
};

/// The numpy name of `d` ("uint16", ...).
llvm::StringRef dtypeName(DType d);
/// Bytes per element of `d`.
unsigned dtypeSize(DType d);
/// Whether `code` is one of the eight codes above.
bool isValidDTypeCode(uint8_t code);
/// Megatron's DType.optimal_dtype: uint16 below 65500 ids, else int32.
DType optimalDType(int64_t vocabSize);

/// "PREFIX.bin" / "PREFIX.idx".
std::string binPath(llvm::StringRef prefix);
std::string idxPath(llvm::StringRef prefix);

/// Collects documents into a .bin stream and writes the matching .idx, as
/// Megatron's IndexedDatasetBuilder does.
class IndexedDatasetBuilder {
public:
  IndexedDatasetBuilder(llvm::raw_ostream &bin, DType dtype)
      : bin_(bin), dtype_(dtype) {}

  /// Appends one document made of sequences of `sequenceLengths` tokens
  /// (summing to tokens.size()); an empty document adds a document-index
  /// entry and no sequence, as Megatron's add_document does. Fails if a
  /// token does not fit the dtype.
  llvm::Error addDocument(llvm::ArrayRef<int32_t> tokens,
                          llvm::ArrayRef<int32_t> sequenceLengths);
  /// Writes the .idx for everything added so far.
  void writeIndex(llvm::raw_ostream &idx) const;

  int64_t numSequences() const { return int64_t(lengths_.size()); }
  int64_t numDocuments() const { return int64_t(docIndex_.size()) - 1; }
  int64_t numTokens() const { return tokens_; }

private:
  llvm::raw_ostream &bin_;
  DType dtype_;
  std::vector<int32_t> lengths_;
  std::vector<int64_t> docIndex_{0};
  int64_t tokens_ = 0;
  std::vector<char> scratch_;
};

/// Writes PREFIX.bin and then PREFIX.idx, each through a temporary file
/// renamed into place (runtime/io/AtomicFile.h); if anything fails neither
/// file is left half-written.
llvm::Error writeIndexedDataset(
    llvm::StringRef prefix, DType dtype,
    llvm::function_ref<llvm::Error(IndexedDatasetBuilder &)> fill);

/// A read-only, memory-mapped MMIDIDX dataset.
class IndexedDataset {
public:
  /// Maps and checks PREFIX.idx and PREFIX.bin.
  static llvm::Expected<std::shared_ptr<const IndexedDataset>>
  open(llvm::StringRef prefix);

  const std::string &prefix() const { return prefix_; }
  DType dtype() const { return dtype_; }
  int64_t numSequences() const { return numSequences_; }
  /// Documents (D - 1).
  int64_t numDocuments() const { return numDocIndex_ - 1; }
  int64_t sequenceLength(int64_t i) const;
  int64_t sequencePointer(int64_t i) const;
  /// Entry k of the document index (k <= numDocuments()).
  int64_t documentIndex(int64_t k) const;
  /// Total tokens in sequences [begin, end).
  int64_t countTokens(int64_t begin, int64_t end) const;

  /// out[j] = token `offset + j` of sequence `seq`, for j < n.
  void read(int64_t seq, int64_t offset, int64_t n, int32_t *out) const;

  /// Bytes of the .bin file; tests use it to check the mapping.
  uint64_t binSize() const { return binSize_; }
  /// Whether the .bin is memory-mapped (always, unless it is empty).
  bool binIsMapped() const { return bin_ != nullptr; }

private:
  IndexedDataset() = default;

  std::string prefix_;
  DType dtype_ = DType::UInt16;
  unsigned itemSize_ = 2;
  int64_t numSequences_ = 0;
  int64_t numDocIndex_ = 0;
  std::unique_ptr<llvm::sys::fs::mapped_file_region> idxMap_, binMap_;
  const uint8_t *lengths_ = nullptr;  // i32[S], unaligned
  const uint8_t *pointers_ = nullptr; // i64[S], unaligned
  const uint8_t *docs_ = nullptr;     // i64[D], unaligned
  const uint8_t *bin_ = nullptr;
  uint64_t binSize_ = 0;
};

} // namespace strata::megatron
