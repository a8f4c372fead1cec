//===- TextGenerator.cpp - Sampling text from a trained model
//--------------===//
#include "runtime/train/TextGenerator.h"

#include "runtime/generate/LogitsModel.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<std::string>
generateText(const ModelConfig &config,
             const llvm::StringMap<const HostTensor *> &params,
             const Tokenizer &tokenizer, llvm::StringRef prompt,
             const SampleOptions &options, Device &device) {
  if (options.temperature <= 0)
    return err("temperature must be > 0 (got " +
               std::to_string(options.temperature) + ")");
  auto model = LogitsModel::create(config, params, device);
  if (!model)
    return model.takeError();

  std::vector<int32_t> context;
  if (auto e = tokenizer.encode(prompt, context))
    return e;
  if (context.empty())
    context.push_back(0);
  size_t promptLen = context.size();

  const int64_t S = config.seq, V = config.vocab, Vp = config.paddedVocab;
  std::mt19937_64 rng(options.seed);
  std::vector<std::pair<float, int32_t>> cand(V);
  for (int64_t n = 0; n < options.maxNewTokens; ++n) {
    // The last seq_len tokens of the context.
    int64_t len = std::min<int64_t>(S, int64_t(context.size()));
    auto rows = (*model)->run(llvm::ArrayRef<int32_t>(context).take_back(len));
    if (!rows)
      return rows.takeError();
    const float *logits = *rows + (len - 1) * Vp;
    // Only real vocabulary entries are candidates (padding rows never are).
    for (int64_t v = 0; v < V; ++v)
      cand[v] = {float(logits[v] / options.temperature), int32_t(v)};
    int64_t k = options.topK > 0 ? std::min(options.topK, V) : V;
    std::partial_sort(cand.begin(), cand.begin() + k, cand.end(),
                      [](auto &a, auto &b) { return a.first > b.first; });
    double sum = 0;
    std::vector<double> p(k);
    for (int64_t j = 0; j < k; ++j)
      sum += p[j] = std::exp(double(cand[j].first - cand[0].first));
    double u = std::uniform_real_distribution<double>(0, sum)(rng);
    int64_t pick = 0;
    while (pick + 1 < k && (u -= p[pick]) > 0)
      ++pick;
    context.push_back(cand[pick].second);
  }
  return tokenizer.decode(
      llvm::ArrayRef<int32_t>(context).drop_front(promptLen));
}

} // namespace strata
