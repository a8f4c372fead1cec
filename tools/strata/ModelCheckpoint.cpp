//===- ModelCheckpoint.cpp - A checkpoint's model, for eval and export ----===//
#include "tools/strata/ModelCheckpoint.h"

namespace strata {

llvm::Expected<std::unique_ptr<ModelCheckpoint>>
loadModelCheckpoint(llvm::StringRef path) {
  auto bad = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + msg);
  };
  auto ckpt = loadCheckpoint(path);
  if (!ckpt)
    return bad(llvm::toString(ckpt.takeError()));
  auto m = std::make_unique<ModelCheckpoint>();
  m->ckpt = std::move(*ckpt);
  const llvm::json::Value *specText = m->ckpt.meta.get("spec");
  if (!specText || !specText->getAsString())
    return bad("no model spec in the checkpoint's meta (not written by strata "
               "train or import-hf?)");
  auto spec =
      parseModelSpec(*specText->getAsString(), (path + " (model spec)").str());
  if (!spec)
    return spec.takeError();
  m->config = resolveModelSpec(*spec);
  if (const llvm::json::Value *tok = m->ckpt.meta.get("tokenizer")) {
    auto t = Tokenizer::fromJSON(*tok);
    if (!t)
      return bad("bad tokenizer: " + llvm::toString(t.takeError()));
    m->tokenizer = std::move(*t);
  }
  for (const NamedTensor &t : m->ckpt.tensors)
    m->params[t.name] = &t.tensor;
  return m;
}

} // namespace strata
