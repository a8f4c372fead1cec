//===- MegatronBatchSource.cpp - Training batches from Megatron data ------===//
#include "runtime/data/megatron/MegatronBatchSource.h"

#include "runtime/data/TokenDataset.h"
#include "runtime/data/megatron/Preprocess.h"

#include "llvm/ADT/Twine.h"

#include <cstring>
#include <vector>

namespace strata::megatron {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

MegatronBatchSource::MegatronBatchSource(BlendedSplit split, int64_t batch,
                                         int64_t seqLen, int64_t microbatches,
                                         int64_t vocabSize)
    : split_(std::move(split)), batch_(batch), seqLen_(seqLen),
      microbatches_(microbatches), vocab_(vocabSize) {}

void MegatronBatchSource::fill(int64_t step, int64_t microbatch,
                               int32_t *tokens, int32_t *labels) const {
  const int64_t T = seqLen_;
  std::vector<int32_t> row(T + 1);
  for (int64_t b = 0; b < batch_; ++b) {
    int64_t i = (step * microbatches_ + microbatch) * batch_ + b;
    std::string why;
    if (llvm::Error e = split_.sample(i, row.data()))
      why = llvm::toString(std::move(e));
    for (int64_t t = 0; why.empty() && t <= T; ++t)
      if (row[t] < 0 || row[t] >= vocab_)
        why = split_.datasets()[split_.datasetOf(i)].describe() +
              ": token id " + std::to_string(row[t]) + " in sample " +
              std::to_string(i) + " is outside the vocabulary of " +
              std::to_string(vocab_) +
              " (the data was tokenized with another tokenizer)";
    if (!why.empty()) {
      std::fill(row.begin(), row.end(), 0);
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.empty())
        error_ = why;
    }
    std::memcpy(tokens + b * T, row.data(), T * sizeof(int32_t));
    std::memcpy(labels + b * T, row.data() + 1, T * sizeof(int32_t));
  }
}

llvm::Error MegatronBatchSource::takeError() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.empty())
    return llvm::Error::success();
  std::string msg = std::move(error_);
  error_.clear();
  return fail(msg);
}

llvm::Expected<MegatronSources> openMegatronData(const MegatronDataConfig &c) {
  if (c.seed > 0xffffffffull)
    return fail("seed " + llvm::Twine(c.seed) +
                " does not fit numpy's "
                "RandomState, which Megatron's data sampling uses (give a "
                "seed below 2^32)");
  auto blend = parseBlend(c.blend);
  if (!blend)
    return blend.takeError();
  auto matrix = parseSplit(c.split);
  if (!matrix)
    return matrix.takeError();
  const int64_t globalBatch = c.batch * c.microbatches;
  MegatronSources s;
  auto train =
      BlendedSplit::build(*blend, *matrix, Split::Train, c.steps * globalBatch,
                          c.seqLen, uint32_t(c.seed));
  if (!train)
    return train.takeError();
  s.train = std::make_unique<MegatronBatchSource>(
      std::move(*train), c.batch, c.seqLen, c.microbatches, c.vocabSize);
  if (c.evalEvery > 0) {
    int64_t n = (c.steps / c.evalEvery + 1) * c.evalIters * globalBatch;
    auto valid = BlendedSplit::build(*blend, *matrix, Split::Valid, n, c.seqLen,
                                     uint32_t(c.seed));
    if (!valid)
      return valid.takeError();
    s.valid = std::make_unique<MegatronBatchSource>(
        std::move(*valid), c.batch, c.seqLen, /*microbatches=*/1, c.vocabSize);
  }
  return s;
}

llvm::Expected<Tokenizer> blendTokenizer(llvm::StringRef blendText,
                                         llvm::StringRef kind) {
  auto blend = parseBlend(blendText);
  if (!blend)
    return blend.takeError();
  auto recorded = recordedTokenizer(blend->prefixes);
  if (!recorded)
    return recorded.takeError();
  if (*recorded)
    return std::move(**recorded);
  if (kind != "char")
    return makeTokenizer(kind, "");
  return fail(tokenizerSidecarPath(blend->prefixes[0]) +
              ": no tokenizer is recorded next to the data, and the char "
              "tokenizer cannot be rebuilt without its text (preprocess with "
              "strata preprocess, or pass --tokenizer byte|FILE naming the "
              "data's tokenizer)");
}

} // namespace strata::megatron
