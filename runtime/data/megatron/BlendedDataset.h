//===- BlendedDataset.h - Megatron's weighted blends of datasets -*- C++
//-*-===//
//
// `--data-path "0.7 P1 0.3 P2"` in Megatron-LM's syntax (utils.py
// get_blend_from_list), built as its BlendedMegatronDatasetBuilder and
// BlendedDataset do (NVIDIA/Megatron-LM commit 00caa53):
//  - one prefix without a weight: the split is that prefix's GPTDataset;
//  - weighted prefixes: weights are normalized; prefix d's GPTDataset of a
//    split of N samples is built for ceil(ceil(N w_d) * 1.005) samples
//    (mid_level_dataset_surplus 0.005), the blend holds sum_d ceil(N w_d)
//    samples, and sample i comes from dataset_index[i] at
//    dataset_sample_index[i], chosen by helpers.cpp build_blending_indices:
//    the dataset whose share lags its weight the most.
// Unlike Megatron, an unweighted list of several prefixes is an error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/data/megatron/GPTDataset.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::megatron {

struct Blend {
  std::vector<std::string> prefixes;
  /// Normalized; none for a single prefix given without a weight.
  std::optional<std::vector<double>> weights;
};

/// Parses "P" or "W1 P1 W2 P2 ...". Fails on an odd number of words (other
/// than one), a weight that is not a finite non-negative number, or weights
/// that sum to zero.
llvm::Expected<Blend> parseBlend(llvm::StringRef text);

/// helpers.cpp build_blending_indices: for each of `size` samples, the
/// dataset and the sample within it.
void buildBlendingIndices(llvm::ArrayRef<double> weights, int64_t size,
                          std::vector<int16_t> &datasetIndex,
                          std::vector<int64_t> &datasetSampleIndex);

/// One split of a blend: the samples training or validation draws.
class BlendedSplit {
public:
  /// Opens every prefix and builds `split` for `numSamples` samples.
  static llvm::Expected<BlendedSplit> build(const Blend &blend,
                                            const SplitMatrix &matrix,
                                            Split split, int64_t numSamples,
                                            int64_t seqLen, uint32_t seed);

  /// Samples available.
  int64_t size() const { return size_; }
  /// Writes the seqLen + 1 tokens of sample `i`; fails past size().
  llvm::Error sample(int64_t i, int32_t *out) const;
  /// Dataset of sample i (0 for a single prefix).
  int datasetOf(int64_t i) const;
  llvm::ArrayRef<GPTDataset> datasets() const { return datasets_; }
  std::string describe() const;

private:
  std::vector<GPTDataset> datasets_;
  bool blended_ = false;
  int64_t size_ = 0;
  std::vector<int16_t> datasetIndex_;
  std::vector<int64_t> datasetSampleIndex_;
};

} // namespace strata::megatron
