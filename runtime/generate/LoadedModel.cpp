//===- LoadedModel.cpp - A training checkpoint, ready to generate from ----===//
#include "runtime/generate/LoadedModel.h"

namespace strata::generate {

llvm::Expected<std::unique_ptr<LoadedModel>>
LoadedModel::load(llvm::StringRef path) {
  auto bad = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": error: " + msg);
  };
  auto ckpt = loadCheckpoint(path);
  if (!ckpt)
    return ckpt.takeError();
  auto m = std::make_unique<LoadedModel>();
  m->checkpoint = std::move(*ckpt);
  const llvm::json::Value *specText = m->checkpoint.meta.get("spec");
  const llvm::json::Value *tok = m->checkpoint.meta.get("tokenizer");
  if (!specText || !specText->getAsString() || !tok)
    return bad("not a training checkpoint (its metadata has no model spec "
               "or tokenizer; generate from a checkpoint.bin written by "
               "`strata train`)");
  auto spec = parseModelSpec(*specText->getAsString(), path.str() + " (model spec)");
  if (!spec)
    return spec.takeError();
  m->config = resolveModelSpec(*spec);
  auto tokenizer = Tokenizer::fromJSON(*tok);
  if (!tokenizer)
    return bad(llvm::toString(tokenizer.takeError()));
  m->tokenizer.emplace(std::move(*tokenizer));
  for (const NamedTensor &t : m->checkpoint.tensors)
    m->params[t.name] = &t.tensor;
  auto weights = ModelWeights::bind(m->config, m->params);
  if (!weights)
    return bad(llvm::toString(weights.takeError()));
  m->weights = std::move(*weights);
  return m;
}

llvm::Expected<std::unique_ptr<Decoder>>
LoadedModel::makeDecoder(bool cached, int64_t slots, Device &device) const {
  // Falcon blocks and Mistral's sliding window (docs/models.md) are not in
  // the cached decoder's kernels; the graph decoder runs every model.
  if (cached && (config.isFalcon() || config.slidingWindow > 0))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the key/value-cache decoder does not implement " +
            std::string(config.isFalcon() ? "Falcon blocks" : "sliding-window attention") +
            " (use --no-kv-cache, which runs the model's graph)");
  if (cached)
    return std::make_unique<CachedDecoder>(weights, slots);
  auto d = GraphDecoder::create(config, params, device, slots);
  if (!d)
    return d.takeError();
  return std::unique_ptr<Decoder>(std::move(*d));
}

} // namespace strata::generate
