//===- KorthikantiTest.cpp - Activation memory vs Korthikanti et al. 2022
//---===//
//
// Table 2 of "Reducing Activation Recomputation in Large Transformer Models"
// gives the activation bytes one transformer layer keeps per microbatch in
// fp16 (s sequence, b microbatch, h hidden, a heads, t tensor-parallel size):
//
//   no parallelism                       sbh(34 + 5as/h)
//   tensor parallel                      sbh(10 + 24/t + 5as/ht)
//   tensor + sequence parallel           sbh(34/t + 5as/ht)
//   tensor parallel + selective          sbh(10 + 24/t)
//   tensor + sequence parallel + sel.    sbh(34/t)
//   full recomputation                   2sbh
//
// The planner's figure is the stash of block 1 of a 2-block GPT-3-like model
// (s=2048, h=12288, a=96, b=1, t=8; graph building is shapes only) in fp16,
// under the Megatron saved-state model (passes/memory/Activations.h), after
// the same passes `strata compile` runs. Each must equal the formula to the
// byte: the model maps the IR onto Megatron's saved tensors one by one.
//
// What strata's own kernels keep differs for a principled reason and is
// checked too: dropout masks are regenerated (no 1-byte masks: 2sbh less, or
// 2sbh/t with sp) and attention_grad recomputes the probabilities (no 5as^2b
// term), so the Strata model gives 32sbh, sbh(8 + 24/t), 32sbh/t, the same
// with "selective", and 2sbh with full recomputation.
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/memory/Activations.h"
#include "passes/recompute/Recompute.h"
#include "passes/spmd/Spmd.h"

#include "llvm/Support/Format.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

constexpr int64_t s = 2048, h = 12288, a = 96, b = 1, t = 8;

/// The GPT-3-like model's forward graph in fp16.
Graph gpt3Layer() {
  pb::ModelSpec spec;
  spec.set_family(pb::ModelSpec::GPT);
  spec.set_vocab_size(1024);
  spec.set_hidden(h);
  spec.set_layers(2);
  spec.set_heads(a);
  spec.set_seq_len(s);
  spec.set_micro_batch(b);
  spec.set_dropout(0.1);
  // The frontends build f32; the same graph in f16 is the same text with
  // every f32 replaced.
  std::string text = graphToString(buildModelGraph(resolveModelSpec(spec)));
  for (size_t at; (at = text.find("f32")) != std::string::npos;)
    text.replace(at, 3, "f16");
  auto g = parseGraph(text);
  EXPECT_TRUE(bool(g)) << toString(g.takeError());
  return std::move(*g);
}

struct Config {
  const char *name;
  int64_t tp;
  bool sp;
  RecomputeMode mode;
  double paper;  // the formula, in bytes
  double strata; // what strata's kernels keep, in bytes
};

/// Block 1's stash in bytes under `model`.
int64_t layerBytes(const Config &c, SavedStateModel model) {
  Graph g = gpt3Layer();
  EXPECT_FALSE(bool(differentiate(g)));
  if (c.tp > 1) {
    EXPECT_FALSE(bool(seedMegatron(g, {c.tp, 1, c.sp})));
    auto part = spmd::Partitioner(g, {}).run();
    EXPECT_TRUE(bool(part)) << toString(part.takeError());
    g = std::move(*part);
  }
  RecomputeOptions o;
  o.mode = c.mode;
  EXPECT_FALSE(bool(recompute(g, o)));
  EXPECT_FALSE(bool(verifyGraph(g)));
  return stashBytesByUnit(g, model)["layers.1"];
}

TEST(Korthikanti, Table2ToTheByte) {
  const double sbh = double(s) * b * h, as_h = double(a) * s / h;
  const Config configs[] = {
      {"no parallelism", 1, false, RecomputeMode::None, sbh * (34 + 5 * as_h),
       sbh * 32},
      {"tensor parallel", t, false, RecomputeMode::None,
       sbh * (10 + 24.0 / t + 5 * as_h / t), sbh * (8 + 24.0 / t)},
      {"tensor + sequence parallel", t, true, RecomputeMode::None,
       sbh * (34.0 / t + 5 * as_h / t), sbh * 32 / t},
      {"tensor parallel + selective", t, false, RecomputeMode::Selective,
       sbh * (10 + 24.0 / t), sbh * (8 + 24.0 / t)},
      {"tensor + sequence + selective", t, true, RecomputeMode::Selective,
       sbh * 34.0 / t, sbh * 32 / t},
      {"full recomputation", t, false, RecomputeMode::Full, sbh * 2, sbh * 2},
  };
  llvm::outs() << llvm::format(
      "%-30s %14s %14s %7s %14s\n", (const char *)"configuration",
      (const char *)"paper (bytes)", (const char *)"megatron model",
      (const char *)"ratio", (const char *)"strata model");
  for (const Config &c : configs) {
    double got = double(layerBytes(c, SavedStateModel::Megatron));
    double own = double(layerBytes(c, SavedStateModel::Strata));
    llvm::outs() << llvm::format("%-30s %14.0f %14.0f %7.4f %14.0f\n", c.name,
                                 c.paper, got, got / c.paper, own);
    EXPECT_EQ(got, c.paper) << c.name;
    EXPECT_EQ(own, c.strata) << c.name;
  }
}

} // namespace
