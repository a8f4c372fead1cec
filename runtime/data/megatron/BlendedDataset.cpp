//===- BlendedDataset.cpp - Megatron's weighted blends of datasets --------===//
#include "runtime/data/megatron/BlendedDataset.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <cmath>

namespace strata::megatron {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Megatron's BlendedMegatronDatasetConfig.mid_level_dataset_surplus.
static constexpr double kSurplus = 0.005;

llvm::Expected<Blend> parseBlend(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef, 8> words;
  llvm::SplitString(text, words);
  auto bad = [&](const llvm::Twine &why) {
    return fail("--data-path '" + text + "': " + why +
                " (give one prefix, or weights and prefixes in turn: "
                "\"0.7 P1 0.3 P2\")");
  };
  if (words.empty())
    return bad("no dataset prefix");
  Blend b;
  if (words.size() == 1) {
    b.prefixes.push_back(words[0].str());
    return b;
  }
  if (words.size() % 2)
    return bad(llvm::Twine(words.size()) + " words, an odd count: a weight "
                                           "or a prefix is missing");
  if (words.size() / 2 >= 32767)
    return bad("more than 32766 datasets");
  std::vector<double> w;
  for (size_t i = 0; i < words.size(); i += 2) {
    double x;
    if (words[i].getAsDouble(x) || !std::isfinite(x))
      return bad("weight '" + words[i] + "' of dataset " +
                 llvm::Twine(i / 2 + 1) + " is not a number");
    if (x < 0)
      return bad("weight " + words[i] + " of " + words[i + 1] + " is negative");
    w.push_back(x);
    b.prefixes.push_back(words[i + 1].str());
  }
  double sum = 0;
  for (double x : w)
    sum += x;
  if (sum <= 0)
    return bad("the weights sum to zero");
  b.weights = normalizeWeights(w);
  return b;
}

void buildBlendingIndices(llvm::ArrayRef<double> weights, int64_t size,
                          std::vector<int16_t> &datasetIndex,
                          std::vector<int64_t> &datasetSampleIndex) {
  std::vector<int64_t> current(weights.size(), 0);
  datasetIndex.resize(size);
  datasetSampleIndex.resize(size);
  for (int64_t s = 0; s < size; ++s) {
    double sd = std::max(double(s), 1.0);
    size_t best = 0;
    double bestErr = weights[0] * sd - double(current[0]);
    for (size_t d = 1; d < weights.size(); ++d) {
      double err = weights[d] * sd - double(current[d]);
      if (err > bestErr) {
        bestErr = err;
        best = d;
      }
    }
    datasetIndex[s] = int16_t(best);
    datasetSampleIndex[s] = current[best]++;
  }
}

llvm::Expected<BlendedSplit>
BlendedSplit::build(const Blend &blend, const SplitMatrix &matrix, Split split,
                    int64_t numSamples, int64_t seqLen, uint32_t seed) {
  BlendedSplit out;
  const auto &bookend = matrix[int(split)];
  if (!bookend)
    return fail("--split gives the " + splitName(split) +
                " split no share of the data (give it a non-zero weight, or "
                "train with --eval-every 0)");
  // Normalized again, as Megatron's BlendedDataset does.
  std::vector<double> weights;
  if (blend.weights)
    weights = normalizeWeights(*blend.weights);
  out.blended_ = blend.weights.has_value();
  int64_t blendSize = 0;
  for (size_t d = 0; d < blend.prefixes.size(); ++d) {
    auto data = IndexedDataset::open(blend.prefixes[d]);
    if (!data)
      return data.takeError();
    int64_t want = numSamples;
    if (out.blended_) {
      // _get_size_per_split_per_dataset: target and surplus buffer.
      double target = std::ceil(double(numSamples) * (*blend.weights)[d]);
      blendSize += int64_t(target);
      want = int64_t(std::ceil(target * (1 + kSurplus)));
    }
    auto [begin, end] = splitRange(*bookend, (*data)->numSequences());
    auto ds = GPTDataset::build(std::move(*data), split, begin, end, want,
                                seqLen, seed);
    if (!ds)
      return ds.takeError();
    out.datasets_.push_back(std::move(*ds));
  }
  if (!out.blended_) {
    out.size_ = out.datasets_[0].size();
    return out;
  }
  out.size_ = blendSize;
  buildBlendingIndices(weights, blendSize, out.datasetIndex_,
                       out.datasetSampleIndex_);
  return out;
}

int BlendedSplit::datasetOf(int64_t i) const {
  return blended_ ? datasetIndex_[i] : 0;
}

llvm::Error BlendedSplit::sample(int64_t i, int32_t *out) const {
  if (i < 0 || i >= size_)
    return fail(describe() + ": sample " + llvm::Twine(i) + " is past the " +
                llvm::Twine(size_) +
                " samples built (the run asks for more samples than it "
                "planned for)");
  const GPTDataset &ds = datasets_[datasetOf(i)];
  int64_t j = blended_ ? datasetSampleIndex_[i] : i;
  if (j >= ds.size())
    return fail(ds.describe() + ": the blend asks for sample " +
                llvm::Twine(j) + " of " + llvm::Twine(ds.size()) +
                " (Megatron's 0.5% surplus did not cover it)");
  ds.sample(j, out);
  return llvm::Error::success();
}

std::string BlendedSplit::describe() const {
  std::string s;
  for (const GPTDataset &d : datasets_)
    s += (s.empty() ? "" : " + ") + d.describe();
  return s;
}

} // namespace strata::megatron
