//===- TestGraphs.h - Model graphs and random tensors for codegen tests ---===//
#pragma once

#include "frontends/Models.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/fusion/Fusion.h"
#include "runtime/HostTensor.h"

#include <gtest/gtest.h>

#include <random>

namespace strata::test {

/// The microbatch graph (forward + autodiff) of a spec, unfused.
inline Graph microbatchOf(const pb::ModelSpec &spec) {
  Graph g = buildModelGraph(resolveModelSpec(spec));
  if (auto e = differentiate(g))
    ADD_FAILURE() << toString(std::move(e));
  return g;
}

/// examples/<name>.textproto.
inline pb::ModelSpec exampleSpec(llvm::StringRef name) {
  auto spec = loadModelSpec(std::string(STRATA_EXAMPLES_DIR) + "/" +
                            name.str() + ".textproto");
  if (!spec) {
    ADD_FAILURE() << toString(spec.takeError());
    return {};
  }
  return *spec;
}

/// A spec from text (the 1-layer blocks with dropout of the lit tests).
inline pb::ModelSpec specFromText(llvm::StringRef text) {
  auto spec = parseModelSpec(text, "<test>");
  if (!spec) {
    ADD_FAILURE() << toString(spec.takeError());
    return {};
  }
  return *spec;
}

/// 1-layer GPT / Llama blocks with dropout 0.1 (dropout in fused kernels).
inline constexpr const char *kGptBlockSpec =
    "name: 'gpt-block' family: GPT vocab_size: 16 "
    "make_vocab_size_divisible_by: 8 "
    "hidden: 8 layers: 1 heads: 2 ffn: 16 seq_len: 4 micro_batch: 2 dropout: "
    "0.1";
inline constexpr const char *kLlamaBlockSpec =
    "name: 'llama-block' family: LLAMA vocab_size: 16 "
    "make_vocab_size_divisible_by: 8 "
    "hidden: 8 layers: 1 heads: 4 kv_heads: 2 ffn: 16 seq_len: 4 micro_batch: "
    "2 "
    "dropout: 0.1";

/// A tensor of `type` with random values: floats uniform in [lo, hi), ints in
/// [0, intRange).
inline HostTensor randomTensor(const TensorType &type, std::mt19937 &rng,
                               double lo = -2.0, double hi = 2.0,
                               int64_t intRange = 8) {
  HostTensor t(type);
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(0, intRange - 1);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.set(i, isFloat(type.dtype) ? real(rng) : double(integer(rng)));
  return t;
}

} // namespace strata::test
