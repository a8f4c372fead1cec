//===- GPTDataset.h - Megatron's GPTDataset sample indices -------*- C++
//-*-===//
//
// Megatron-LM's GPTDataset (megatron/core/datasets/gpt_dataset.py and
// helpers.cpp build_sample_idx, NVIDIA/Megatron-LM commit 00caa53): the
// sequences of one split of an IndexedDataset are repeated for as many
// epochs as the requested samples need, shuffled per epoch into the
// document index (the last epoch on its own when it supplies under 80% of
// an epoch's samples), cut into samples of seq_len + 1 tokens that cross
// document boundaries and overlap by one token (the sample index: document
// position and offset where each sample starts), and the samples are
// shuffled (the shuffle index). Both shuffles use one
// numpy.random.RandomState(seed), so the same prefix, split, seed, sequence
// length and sample count give exactly Megatron's samples.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/megatron/IndexedDataset.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::megatron {

/// Megatron's Split enum.
enum class Split { Train = 0, Valid = 1, Test = 2 };
llvm::StringRef splitName(Split s);

/// Per split, the [begin, end) fraction of the dataset's sequences, or none
/// for an empty split (Megatron's split_matrix).
using SplitMatrix = std::array<std::optional<std::pair<double, double>>, 3>;

/// Megatron's parse_and_normalize_split + convert_split_vector_to_split_matrix
/// for a string like "969,30,1" (missing parts are 0). Unlike Megatron,
/// which keeps only the [.0-9] runs of the string, any other character is
/// an error.
llvm::Expected<SplitMatrix> parseSplit(llvm::StringRef split);

/// numpy's float64 sum of `w` (pairwise summation), divided out: Megatron's
/// utils.normalize, bit for bit.
std::vector<double> normalizeWeights(llvm::ArrayRef<double> w);

/// The sequences [begin, end) of `bookend` over `numSequences`:
/// int(round(fraction * n)) with Python's round-half-even.
std::pair<int64_t, int64_t> splitRange(std::pair<double, double> bookend,
                                       int64_t numSequences);

class GPTDataset {
public:
  /// Builds the three indices over sequences [begin, end) of `data` for
  /// `numSamples` samples of `seqLen` (+1) tokens, shuffled with `seed`.
  static llvm::Expected<GPTDataset>
  build(std::shared_ptr<const IndexedDataset> data, Split split, int64_t begin,
        int64_t end, int64_t numSamples, int64_t seqLen, uint32_t seed);

  /// Samples available (>= the requested count): len(GPTDataset).
  int64_t size() const { return int64_t(sampleIndex_.size() / 2) - 1; }
  int64_t seqLen() const { return seqLen_; }
  int64_t numEpochs() const { return numEpochs_; }
  /// "PREFIX (train split)".
  std::string describe() const;

  /// Writes the seqLen + 1 tokens of sample `i` (i < size()).
  void sample(int64_t i, int32_t *out) const;

  llvm::ArrayRef<int32_t> documentIndex() const { return documentIndex_; }
  /// Pairs (document-index position, token offset), flattened.
  llvm::ArrayRef<int64_t> sampleIndex() const { return sampleIndex_; }
  llvm::ArrayRef<int64_t> shuffleIndex() const { return shuffleIndex_; }

private:
  GPTDataset() = default;

  std::shared_ptr<const IndexedDataset> data_;
  Split split_ = Split::Train;
  int64_t seqLen_ = 0;
  int64_t numEpochs_ = 0;
  std::vector<int32_t> documentIndex_;
  std::vector<int64_t> sampleIndex_;
  std::vector<int64_t> shuffleIndex_;
};

} // namespace strata::megatron
