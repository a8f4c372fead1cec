//===- CollectiveReportTest.cpp - The collectives of a compiled step
//-------===//
//
// The report (passes/spmd/CollectiveReport.h) over compiled GPT steps,
// against the communication Megatron-LM's papers derive by hand for a
// transformer layer of micro-batch b, sequence s, hidden h (f32 here):
//  - tp without sp: 2 all-reduces of b*s*h values per layer forward and 2
//    backward (Shoeybi et al. 2019, the f/g pairs);
//  - tp with sp: each becomes an all-gather + reduce-scatter pair moving the
//    same b*s*h, so the bytes on the wire are unchanged (Korthikanti et al.
//    2022, section 4.2.2). The backward also gathers the two sequence-split
//    inputs of the column-parallel matmuls again for their weight gradients
//    instead of keeping them gathered, as Megatron-LM's
//    LinearWithGradAccumulationAndAsyncCommunication does;
//    The gradients of the parameters read in sequence-split regions (norm
//    weights and biases, row-parallel biases: 6 of h values per layer) are
//    partial over tp and all-reduced, as Megatron-LM does for parameters
//    marked sequence_parallel;
//  - dp: one all-reduce over dp per step of every local gradient;
//  - pp: the residual stream b*s*h crosses each stage boundary once per
//    microbatch forward (send) and its gradient once backward.
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/CollectiveReport.h"
#include "frontends/Models.h"
#include "passes/pipeline/GradReduction.h"
#include "passes/pipeline/ParallelCompile.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

constexpr int64_t B = 2, S = 8, H = 16, L = 2;
constexpr int64_t kStreamBytes = B * S * H * 4; // one f32 residual stream

ModelConfig gpt() {
  ModelConfig c;
  c.family = pb::ModelSpec::GPT;
  c.name = "gpt-collectives";
  c.vocab = 30;
  c.paddedVocab = 32;
  c.hidden = H;
  c.layers = L;
  c.heads = 4;
  c.kvHeads = 4;
  c.headDim = 4;
  c.ffn = 64;
  c.seq = S;
  c.microBatch = B;
  c.normEps = 1e-5;
  c.initStd = 0.02;
  c.tieEmbeddings = true;
  return c;
}

/// Every collective of every program of the compiled step, F and B running
/// `o.microbatches` times.
std::vector<CollectiveUse> collectives(const ParallelCompileOptions &o) {
  auto c = compilePipeline(buildModelGraph(gpt()), o);
  EXPECT_TRUE(bool(c)) << toString(c.takeError());
  std::vector<CollectiveUse> uses;
  if (!c)
    return uses;
  for (const PipelineStage &s : c->pipeline.stages) {
    std::string j = std::to_string(s.index);
    listCollectives(s.forward, "stage " + j + " F", o.microbatches, uses);
    listCollectives(s.backward, "stage " + j + " B", o.microbatches, uses);
  }
  // The dp reductions the runtime makes in place before each optimizer
  // (passes/pipeline/GradReduction.h), as `inspect --collectives` lists them.
  for (const Graph &opt : c->pipeline.optimizers) {
    listCollectives(gradientReductions(opt), "gradients", 1, uses);
    listCollectives(opt, "optimizer", 1, uses);
    listCollectives(parameterGathers(opt), "parameters", 1, uses);
  }
  return uses;
}

/// The uses in programs of kind `kind` ("F", "B") whose scope is in layer l.
std::vector<CollectiveUse> inLayer(const std::vector<CollectiveUse> &uses,
                                   llvm::StringRef kind, int64_t l) {
  std::vector<CollectiveUse> out;
  std::string scope = "layers." + std::to_string(l) + ".";
  for (const CollectiveUse &u : uses)
    if (llvm::StringRef(u.program).endswith(kind) &&
        llvm::StringRef(u.src).startswith(scope))
      out.push_back(u);
  return out;
}

TEST(CollectiveReport, TensorParallelLayerHasTwoAllReducesEachWay) {
  ParallelCompileOptions o;
  o.tp = 2;
  auto uses = collectives(o);
  for (int64_t l = 0; l < L; ++l)
    for (const char *kind : {"F", "B"}) {
      auto layer = inLayer(uses, kind, l);
      ASSERT_EQ(layer.size(), 2u) << "layer " << l << " " << kind;
      for (const CollectiveUse &u : layer) {
        EXPECT_EQ(u.op, "all_reduce");
        EXPECT_EQ(u.reduce, "sum");
        EXPECT_EQ(u.group, "tp");
        EXPECT_EQ(u.groupSize, 2);
        EXPECT_EQ(u.bytes, kStreamBytes);
        EXPECT_EQ(u.sentBytes, kStreamBytes); // ring: 2(n-1)/n = 1 for n=2
        EXPECT_FALSE(u.reason.empty());
      }
    }
}

TEST(CollectiveReport, SequenceParallelPairsMoveTheSameBytes) {
  ParallelCompileOptions tp, sp;
  tp.tp = sp.tp = 4;
  sp.sp = true;
  auto plain = collectives(tp), split = collectives(sp);
  for (int64_t l = 0; l < L; ++l)
    for (const char *kind : {"F", "B"}) {
      auto layer = inLayer(split, kind, l);
      int64_t gathers = 0, regathers = 0, scatters = 0, paramGrads = 0,
              sent = 0, plainSent = 0;
      for (const CollectiveUse &u : layer) {
        if (u.bytes == H * 4) {
          ++paramGrads;
          EXPECT_EQ(u.op, "all_reduce");
          EXPECT_EQ(u.value.rfind("grad.", 0), 0u) << u.value;
          continue;
        }
        EXPECT_NE(u.op, "all_reduce") << u.src << ": " << u.reason;
        EXPECT_EQ(u.bytes, kStreamBytes) << u.src << ": " << u.reason;
        if (llvm::StringRef(u.reason).startswith("recompute: gathered again")) {
          EXPECT_EQ(u.op, "all_gather");
          ++regathers;
          continue;
        }
        gathers += u.op == "all_gather";
        scatters += u.op == "reduce_scatter";
        sent += u.sentBytes;
      }
      EXPECT_EQ(gathers, 2) << "layer " << l << " " << kind;
      EXPECT_EQ(scatters, 2) << "layer " << l << " " << kind;
      bool backward = std::string(kind) == "B";
      EXPECT_EQ(regathers, backward ? 2 : 0);
      EXPECT_EQ(paramGrads, backward ? 6 : 0);
      for (const CollectiveUse &u : inLayer(plain, kind, l))
        plainSent += u.sentBytes;
      EXPECT_EQ(sent, plainSent) << "layer " << l << " " << kind;
    }
}

TEST(CollectiveReport, DataParallelReducesEveryGradientOncePerStep) {
  ParallelCompileOptions o;
  o.dp = 2;
  o.microbatches = 4;
  auto uses = collectives(o);
  Graph g = buildModelGraph(gpt());
  int64_t paramBytes = 0;
  for (ValueId p : g.params())
    paramBytes += g.value(p).type.bytes();
  std::vector<CollectiveTotal> totals = totalCollectives(uses);
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0].group, "dp");
  // The gradients, plus the loss reported over dp (4 bytes per microbatch).
  int64_t gradBytes = 0;
  for (const CollectiveUse &u : uses)
    if (u.program == "gradients") {
      EXPECT_EQ(u.runsPerStep, 1);
      gradBytes += u.bytes;
    } else {
      EXPECT_EQ(u.runsPerStep, 4);
    }
  EXPECT_EQ(gradBytes, paramBytes);
}

TEST(CollectiveReport, PipelineSendsTheStreamAcrossEachBoundary) {
  ParallelCompileOptions o;
  o.pp = 2;
  o.microbatches = 4;
  auto uses = collectives(o);
  Graph g = buildModelGraph(gpt());
  int64_t wteBytes = g.value(g.params()[0]).type.bytes();
  ASSERT_EQ(g.value(g.params()[0]).name, "wte");
  int64_t sends = 0, recvs = 0, tiedSends = 0, tiedRecvs = 0;
  for (const CollectiveUse &u : uses) {
    if (u.op != "send" && u.op != "recv")
      continue;
    EXPECT_EQ(llvm::StringRef(u.group).split(' ').first, "pp");
    bool send = u.op == "send";
    EXPECT_EQ(u.sentBytes, send ? u.bytes : 0);
    if (u.program == "optimizer") {
      // The tied wte: its gradient to the owner, the new value back.
      (send ? tiedSends : tiedRecvs) += 1;
      EXPECT_EQ(u.bytes, wteBytes) << u.value;
      EXPECT_EQ(u.runsPerStep, 1);
      continue;
    }
    (send ? sends : recvs) += 1;
    EXPECT_EQ(u.bytes, kStreamBytes) << u.program << " " << u.value;
    EXPECT_EQ(u.runsPerStep, 4);
  }
  // Stage 0 F sends, stage 1 F receives; gradients go back in B.
  EXPECT_EQ(sends, 2);
  EXPECT_EQ(recvs, 2);
  EXPECT_EQ(tiedSends, 2);
  EXPECT_EQ(tiedRecvs, 2);
}

} // namespace
