//===- TestGraphs.h - Model graphs and random tensors for codegen tests ---===//
#pragma once

#include "codegen/KernelPlan.h"
#include "frontends/Models.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/fusion/Fusion.h"
#include "runtime/HostTensor.h"
#include "runtime/train/ParamInit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

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

/// Every row op with a prologue and an epilogue (element type T, replaced
/// by the tests): scale + mask + softmax (+ dropout), dropout_grad +
/// softmax_grad (+ scale), residual add + layer_norm (+ gelu), mul +
/// rms_norm (+ silu), and the norm gradients with dw / db, an added
/// residual gradient and a column sum; rows of 40 over [4,6].
inline constexpr const char *kRowOpsIR = R"(
graph @row_ops(%x: T[4,6,40], %mask: T[6,40], %w: T[40], %b: T[40], %dy: T[4,6,40], %res: T[4,6,40]) {
  %sx = scale(%x) {value=0.125} : T[4,6,40]
  %ms = add(%sx, %mask) : T[4,6,40]
  %p = softmax(%ms) : T[4,6,40]
  %pd = dropout(%p) {p=0.25, stream=1} : T[4,6,40]
  %dd = dropout_grad(%dy) {p=0.25, stream=1} : T[4,6,40]
  %ds = softmax_grad(%dd, %p) : T[4,6,40]
  %dsx = scale(%ds) {value=0.125} : T[4,6,40]
  %h = add(%res, %x) : T[4,6,40]
  %ln = layer_norm(%h, %w, %b) {eps=1e-05} : T[4,6,40]
  %act = gelu(%ln) {approx="tanh"} : T[4,6,40]
  %q = mul(%x, %res) : T[4,6,40]
  %rn = rms_norm(%q, %w) {eps=1e-06} : T[4,6,40]
  %rs = silu(%rn) : T[4,6,40]
  %dy2 = mul(%dy, %res) : T[4,6,40]
  %lg, %gw, %gb = layer_norm_grad(%dy2, %h, %w, %b) {eps=1e-05} : T[4,6,40], T[40], T[40]
  %gr = add(%lg, %dy) : T[4,6,40]
  %gs = reduce_sum(%gr) {axes=[0, 1]} : T[40]
  %rg, %rgw = rms_norm_grad(%dy, %q, %w) {eps=1e-06} : T[4,6,40], T[40]
  %rgs = scale(%rg) {value=2.0} : T[4,6,40]
  return %pd, %dsx, %act, %rs, %gr, %gw, %gb, %gs, %rgs, %rgw
}
)";

/// `text` with the element type placeholder `T[` (and `"T"`) replaced by
/// `dtype` ("f32", "f64").
inline std::string withDType(std::string text, llvm::StringRef dtype) {
  for (size_t at; (at = text.find("T[")) != std::string::npos;)
    text.replace(at, 1, dtype.str());
  for (size_t at; (at = text.find("\"T\"")) != std::string::npos;)
    text.replace(at, 3, "\"" + dtype.str() + "\"");
  return text;
}

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

/// Worst element of |a - b| / (|b| + 1), with its index, for failure
/// messages (a NaN on one side only is infinitely far).
struct Diff {
  double worst = 0;
  int64_t at = -1;
};
inline Diff elementDiff(const HostTensor &a, const HostTensor &b) {
  Diff d;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    double x = a.get(i), y = b.get(i);
    double e = std::isnan(x) != std::isnan(y) ? INFINITY
               : std::isnan(x)                ? 0
                               : std::abs(x - y) / (std::abs(y) + 1);
    if (e > d.worst || d.at < 0)
      d = {e, i};
  }
  return d;
}

/// The inputs of a model's microbatch graph `g`: its parameters as
/// training initializes them (seed 1337), token ids and labels drawn from
/// `rng` below their vocab. An error fails the test.
inline std::vector<HostTensor> modelInputs(const Graph &g, std::mt19937 &rng) {
  std::vector<HostTensor> inputs;
  for (ValueId v : g.inputs()) {
    const Value &val = g.value(v);
    if (val.isParam()) {
      auto t = initParam(g, v, /*seed=*/1337);
      if (!t) {
        ADD_FAILURE() << toString(t.takeError());
        return {};
      }
      inputs.push_back(std::move(*t));
    } else { // tokens, labels
      inputs.push_back(
          randomTensor(val.type, rng, 0, 0, val.attrs.getInt("vocab", 2)));
    }
  }
  return inputs;
}

/// The kernel plans of `g`'s fused nodes, in node order; a node without a
/// plan fails the test.
inline std::vector<codegen::KernelPlan> fusedPlans(const Graph &g) {
  std::vector<codegen::KernelPlan> plans;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused)
      continue;
    auto plan = codegen::planKernel(*n.body);
    if (!plan) {
      ADD_FAILURE() << toString(plan.takeError());
      continue;
    }
    plans.push_back(std::move(*plan));
  }
  return plans;
}

} // namespace strata::test
