//===- TestModels.h - Small random GPT / Llama models for generation tests
//-===//
//
// Parameters are drawn so that logits spread over several units (weights
// ~ N(0, 1/in) and norm gains near 1), which keeps greedy decoding far from
// ties: cached and uncached decoding, whose logits differ by float
// rounding, must then pick the same tokens.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/Models.h"
#include "runtime/HostTensor.h"

#include "llvm/ADT/StringMap.h"

#include <random>
#include <string>
#include <vector>

namespace strata::test {

/// gpt_tiny / llama_tiny shrunk: vocab 65 (padded to 128), 2 layers,
/// 4 heads (Llama: 2 kv heads, grouped-query), the given seq.
inline ModelConfig tinyConfig(bool gpt, int64_t seq) {
  ModelConfig c;
  c.family = gpt ? pb::ModelSpec::GPT : pb::ModelSpec::LLAMA;
  c.name = gpt ? "gpt-test" : "llama-test";
  c.vocab = 65;
  c.paddedVocab = 128;
  c.hidden = 64;
  c.layers = 2;
  c.heads = 4;
  c.kvHeads = gpt ? 4 : 2;
  c.headDim = 16;
  c.ffn = gpt ? 256 : 176;
  c.seq = seq;
  c.microBatch = 1;
  c.normEps = 1e-5;
  c.ropeTheta = 10000;
  c.initStd = 0.02;
  c.tieEmbeddings = gpt;
  return c;
}

/// Random parameters for every parameter input of `c`'s model graph.
struct TestParams {
  std::vector<std::pair<std::string, HostTensor>> tensors;
  llvm::StringMap<const HostTensor *> map;

  TestParams(const ModelConfig &c, uint64_t seed) {
    Graph g = buildModelGraph(c);
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0, 1);
    for (ValueId v : g.inputs()) {
      const Value &val = g.value(v);
      if (val.name == "tokens" || val.name == "labels")
        continue;
      HostTensor t(val.type);
      llvm::StringRef name = val.name;
      bool norm = name.contains("ln") && name.endswith(".w");
      double std =
          name.endswith(".b") ? 0.1
          : val.type.shape.size() == 2
              ? (name == "wpe" ? 0.3
                               : 1.0 / std::sqrt(double(val.type.shape[0])))
              : 0.1;
      if (name == "wte")
        std = 0.5;
      for (int64_t i = 0; i < t.numElements(); ++i)
        t.set(i, (norm ? 1.0 : 0.0) + std * normal(rng));
      tensors.emplace_back(val.name, std::move(t));
    }
    for (auto &[n, t] : tensors)
      map[n] = &t;
  }
};

} // namespace strata::test
