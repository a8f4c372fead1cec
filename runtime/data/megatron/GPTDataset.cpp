//===- GPTDataset.cpp - Megatron's GPTDataset sample indices --------------===//
#include "runtime/data/megatron/GPTDataset.h"

#include "runtime/data/megatron/NumpyRandom.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"

#include <cmath>
#include <cstdlib>

namespace strata::megatron {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::StringRef splitName(Split s) {
  static const char *names[] = {"train", "valid", "test"};
  return names[int(s)];
}

/// numpy's pairwise_sum for float64 (numpy/core/src/umath/loops_utils.h).
static double pairwiseSum(const double *a, size_t n) {
  if (n < 8) {
    double res = 0.;
    for (size_t i = 0; i < n; ++i)
      res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j)
      r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j)
        r[j] += a[i + j];
    double res =
        ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i)
      res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwiseSum(a, n2) + pairwiseSum(a + n2, n - n2);
}

std::vector<double> normalizeWeights(llvm::ArrayRef<double> w) {
  double sum = 0. + pairwiseSum(w.data(), w.size());
  std::vector<double> out;
  for (double x : w)
    out.push_back(x / sum);
  return out;
}

llvm::Expected<SplitMatrix> parseSplit(llvm::StringRef split) {
  auto bad = [&](const llvm::Twine &why) {
    return fail("--split '" + split + "': " + why +
                " (give up to three non-negative weights for train, valid "
                "and test, e.g. 969,30,1)");
  };
  llvm::SmallVector<llvm::StringRef, 4> parts;
  split.split(parts, ',');
  if (parts.size() > 3)
    return bad("more than three parts");
  std::vector<double> v;
  for (llvm::StringRef p : parts) {
    p = p.trim();
    double x;
    if (p.empty() ||
        p.find_first_not_of("0123456789.") != llvm::StringRef::npos ||
        p.getAsDouble(x))
      return bad("'" + p + "' is not a non-negative number");
    v.push_back(x);
  }
  v.resize(3, 0.0);
  if (v[0] + v[1] + v[2] <= 0)
    return bad("the weights sum to zero");
  std::vector<double> n = normalizeWeights(v);
  // [0, a, a+b, a+b+c] -> bookends; an empty bookend is no split.
  double expansion[4] = {0, 0, 0, 0};
  for (int i = 0; i < 3; ++i)
    expansion[i + 1] = expansion[i] + n[i];
  SplitMatrix m;
  for (int i = 0; i < 3; ++i)
    if (expansion[i + 1] > expansion[i])
      m[i] = std::make_pair(expansion[i], expansion[i + 1]);
  return m;
}

std::pair<int64_t, int64_t> splitRange(std::pair<double, double> bookend,
                                       int64_t n) {
  // std::nearbyint rounds half to even in the default rounding mode, as
  // Python's round() does.
  return {int64_t(std::nearbyint(bookend.first * double(n))),
          int64_t(std::nearbyint(bookend.second * double(n)))};
}

/// _build_document_index: the split's sequences once per epoch, shuffled.
static void buildDocumentIndex(int64_t begin, int64_t end, int64_t epochs,
                               NumpyRandomState &rng, bool separateFinalEpoch,
                               std::vector<int32_t> &out) {
  if (separateFinalEpoch && epochs > 1) {
    buildDocumentIndex(begin, end, epochs - 1, rng, false, out);
    buildDocumentIndex(begin, end, 1, rng, false, out);
    return;
  }
  size_t first = out.size();
  for (int64_t e = 0; e < epochs; ++e)
    for (int64_t d = begin; d < end; ++d)
      out.push_back(int32_t(d));
  rng.shuffle(llvm::MutableArrayRef<int32_t>(out).drop_front(first));
}

/// helpers.cpp build_sample_idx with drop_last_partial_sequence and
/// add_extra_token_to_sequence, Megatron's defaults.
static std::vector<int64_t> buildSampleIndex(const IndexedDataset &data,
                                             llvm::ArrayRef<int32_t> docIdx,
                                             int64_t seqLen, int64_t epochs,
                                             int64_t tokensPerEpoch) {
  const int64_t extra = 1;
  int64_t numSamples = (epochs * tokensPerEpoch - extra) / seqLen;
  std::vector<int64_t> idx;
  idx.reserve(2 * (numSamples + 1));
  int64_t docPos = 0, offset = 0;
  idx.push_back(docPos);
  idx.push_back(offset);
  for (int64_t s = 1; s <= numSamples; ++s) {
    int64_t remaining = seqLen + extra;
    while (remaining != 0) {
      int64_t length = data.sequenceLength(docIdx[docPos]) - offset;
      remaining -= length;
      if (remaining <= 0) {
        offset += remaining + length - extra;
        remaining = 0;
      } else if (docPos == int64_t(docIdx.size()) - 1) {
        offset = data.sequenceLength(docIdx[docPos]) - extra;
        break;
      } else {
        ++docPos;
        offset = 0;
      }
    }
    idx.push_back(docPos);
    idx.push_back(offset);
  }
  return idx;
}

llvm::Expected<GPTDataset>
GPTDataset::build(std::shared_ptr<const IndexedDataset> data, Split split,
                  int64_t begin, int64_t end, int64_t numSamples,
                  int64_t seqLen, uint32_t seed) {
  GPTDataset ds;
  ds.data_ = std::move(data);
  ds.split_ = split;
  ds.seqLen_ = seqLen;
  int64_t tokensPerEpoch = ds.data_->countTokens(begin, end);
  if (tokensPerEpoch <= 1)
    return fail(ds.describe() + ": sequences [" + llvm::Twine(begin) + ", " +
                llvm::Twine(end) + ") hold " + llvm::Twine(tokensPerEpoch) +
                " tokens; a split needs at least 2 (use more data or give "
                "this split a larger --split share)");
  // _get_num_epochs
  int64_t epochs = 1, tokens = tokensPerEpoch;
  int64_t requested = numSamples * seqLen + 1;
  while (tokens < requested) {
    ++epochs;
    tokens += tokensPerEpoch;
  }
  ds.numEpochs_ = epochs;
  bool separate = false;
  int64_t samplesSansFinal = 0;
  if (epochs > 1) {
    samplesSansFinal = ((epochs - 1) * tokensPerEpoch - 1) / seqLen;
    int64_t fromFinal = numSamples - samplesSansFinal;
    int64_t perEpoch = (tokensPerEpoch - 1) / seqLen;
    if (fromFinal < 0 || fromFinal > perEpoch + 1)
      return fail(ds.describe() +
                  ": internal error: " + llvm::Twine(fromFinal) +
                  " samples from the final epoch of " + llvm::Twine(perEpoch));
    separate = fromFinal < int64_t(0.80 * double(perEpoch));
  }
  NumpyRandomState rng(seed);
  buildDocumentIndex(begin, end, epochs, rng, separate, ds.documentIndex_);
  ds.sampleIndex_ = buildSampleIndex(*ds.data_, ds.documentIndex_, seqLen,
                                     epochs, tokensPerEpoch);
  // _build_shuffle_index
  int64_t total = ds.size();
  int64_t first = separate ? samplesSansFinal : total;
  ds.shuffleIndex_.resize(total);
  for (int64_t i = 0; i < total; ++i)
    ds.shuffleIndex_[i] = i;
  llvm::MutableArrayRef<int64_t> all(ds.shuffleIndex_);
  rng.shuffle(all.take_front(first));
  if (first != total)
    rng.shuffle(all.drop_front(first));
  return ds;
}

std::string GPTDataset::describe() const {
  return data_->prefix() + " (" + splitName(split_).str() + " split)";
}

void GPTDataset::sample(int64_t i, int32_t *out) const {
  int64_t idx = shuffleIndex_[i];
  int64_t docBeg = sampleIndex_[2 * idx], offBeg = sampleIndex_[2 * idx + 1];
  int64_t docEnd = sampleIndex_[2 * idx + 2],
          offEnd = sampleIndex_[2 * idx + 3];
  if (docBeg == docEnd) {
    data_->read(documentIndex_[docBeg], offBeg, offEnd - offBeg + 1, out);
    return;
  }
  for (int64_t k = docBeg; k <= docEnd; ++k) {
    int64_t seq = documentIndex_[k];
    int64_t offset = k == docBeg ? offBeg : 0;
    int64_t n = k < docEnd ? data_->sequenceLength(seq) - offset : offEnd + 1;
    data_->read(seq, offset, n, out);
    out += n;
  }
}

} // namespace strata::megatron
