//===- LoadedModel.cpp - A training checkpoint, ready to generate from ----===//
#include "runtime/generate/LoadedModel.h"

#include "runtime/data/TokenDataset.h"

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
  if (!specText || !specText->getAsString())
    return bad("not a model checkpoint (its metadata has no model spec; "
               "generate from a checkpoint.bin written by `strata train` or "
               "`strata import-hf`)");
  auto spec =
      parseModelSpec(*specText->getAsString(), path.str() + " (model spec)");
  if (!spec)
    return spec.takeError();
  m->config = resolveModelSpec(*spec);
  if (tok) {
    auto tokenizer = Tokenizer::fromJSON(*tok);
    if (!tokenizer)
      return bad(llvm::toString(tokenizer.takeError()));
    m->tokenizer.emplace(std::move(*tokenizer));
  }
  for (const NamedTensor &t : m->checkpoint.tensors)
    m->params[t.name] = &t.tensor;
  auto weights = ModelWeights::bind(m->config, m->params);
  if (!weights)
    return bad(llvm::toString(weights.takeError()));
  m->weights = std::move(*weights);
  return m;
}

llvm::Error LoadedModel::chooseTokenizer(llvm::StringRef flag,
                                         llvm::StringRef path) {
  auto err = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (flag.empty()) {
    if (!tokenizer)
      return err(path +
                 ": error: the checkpoint stores no tokenizer (import-hf "
                 "copies none): pass --tokenizer byte or a tokenizer.json / "
                 "SentencePiece .model");
    return llvm::Error::success();
  }
  if (flag == "char")
    return err("--tokenizer char needs the training text; leave the flag out "
               "to use the checkpoint's tokenizer");
  auto t = makeTokenizer(flag, "");
  if (!t)
    return t.takeError();
  if (t->vocabSize() > config.vocab)
    return err("--tokenizer " + flag + " has " + llvm::Twine(t->vocabSize()) +
               " tokens, more than the model's " + llvm::Twine(config.vocab));
  tokenizer.emplace(std::move(*t));
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Decoder>>
LoadedModel::makeDecoder(bool cached, int64_t slots, Device &device) const {
  // Falcon blocks and Mistral's sliding window (docs/models.md) are not in
  // the cached decoder's kernels; the graph decoder runs every model.
  if (cached && (config.isFalcon() || config.slidingWindow > 0))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the key/value-cache decoder does not implement " +
            std::string(config.isFalcon() ? "Falcon blocks"
                                          : "sliding-window attention") +
            " (use --no-kv-cache, which runs the model's graph)");
  if (cached)
    return std::make_unique<CachedDecoder>(weights, slots);
  auto d = GraphDecoder::create(config, params, device, slots);
  if (!d)
    return d.takeError();
  return std::unique_ptr<Decoder>(std::move(*d));
}

} // namespace strata::generate
