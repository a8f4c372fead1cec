//===- GraphDecoder.cpp - Next-token logits by the whole forward graph ----===//
//
// The reference the key/value cache is tested against, and `strata generate
// --no-kv-cache`: the model's forward graph (batch 1, the spec's seq; a
// LogitsModel) runs for every new token on the window so far.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/Decoder.h"

#include "runtime/generate/LogitsModel.h"

#include <algorithm>

namespace strata::generate {

GraphDecoder::GraphDecoder(const ModelConfig &config, int64_t slots)
    : Decoder(config, slots), windows_(static_cast<size_t>(slots)) {}

GraphDecoder::~GraphDecoder() = default;

llvm::Expected<std::unique_ptr<GraphDecoder>>
GraphDecoder::create(const ModelConfig &config,
                     const llvm::StringMap<const HostTensor *> &params,
                     Device &device, int64_t slots) {
  std::unique_ptr<GraphDecoder> d(new GraphDecoder(config, slots));
  auto model = LogitsModel::create(config, params, device);
  if (!model)
    return model.takeError();
  d->model_ = std::move(*model);
  return d;
}

llvm::Expected<const float *> GraphDecoder::run(int64_t slot) {
  return model_->run(windows_[size_t(slot)]);
}

llvm::Error GraphDecoder::prefill(int64_t slot, llvm::ArrayRef<int32_t> tokens,
                                  bool allRows, float *logits) {
  if (auto e = checkPrefill(slot, tokens))
    return e;
  windows_[size_t(slot)].assign(tokens.begin(), tokens.end());
  lengths_[size_t(slot)] = int64_t(tokens.size());
  auto out = run(slot);
  if (!out)
    return out.takeError();
  int64_t Vp = config_.paddedVocab, n = int64_t(tokens.size());
  int64_t first = allRows ? 0 : n - 1;
  std::copy(*out + first * Vp, *out + n * Vp, logits);
  return llvm::Error::success();
}

llvm::Error GraphDecoder::decode(llvm::ArrayRef<int64_t> slots,
                                 llvm::ArrayRef<int32_t> tokens,
                                 float *logits) {
  if (auto e = checkDecode(slots, tokens))
    return e;
  int64_t Vp = config_.paddedVocab;
  for (size_t i = 0; i < slots.size(); ++i) {
    int64_t s = slots[i];
    windows_[size_t(s)].push_back(tokens[i]);
    int64_t n = ++lengths_[size_t(s)];
    auto out = run(s);
    if (!out)
      return out.takeError();
    std::copy(*out + (n - 1) * Vp, *out + n * Vp, logits + int64_t(i) * Vp);
  }
  return llvm::Error::success();
}

} // namespace strata::generate
