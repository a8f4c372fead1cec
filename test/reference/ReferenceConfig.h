//===- ReferenceConfig.h - The model config of a PyTorch reference run ----===//
//
// make_reference.py (and the autocast reference) write the model's sizes to
// config.json; the C++ tests build the same model from them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"

#include "llvm/Support/JSON.h"

namespace strata::test {

/// The reference's GPT or Llama, without dropout.
inline ModelConfig configFrom(const llvm::json::Object &j) {
  auto i = [&](const char *k) { return *j.getInteger(k); };
  ModelConfig c;
  c.family = *j.getString("family") == "gpt" ? pb::ModelSpec::GPT
                                             : pb::ModelSpec::LLAMA;
  c.name = "reference";
  c.vocab = i("real_vocab");
  c.paddedVocab = i("vocab");
  c.hidden = i("hidden");
  c.layers = i("layers");
  c.heads = i("heads");
  c.kvHeads = i("kv_heads");
  c.headDim = c.hidden / c.heads;
  c.ffn = i("ffn");
  c.seq = i("seq");
  c.microBatch = i("batch");
  c.dropout = 0;
  c.normEps = *j.getNumber("norm_eps");
  c.ropeTheta = *j.getNumber("rope_theta");
  c.initStd = 0.02;
  c.tieEmbeddings = c.isGPT();
  return c;
}

} // namespace strata::test
