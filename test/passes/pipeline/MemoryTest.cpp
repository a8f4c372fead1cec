//===- MemoryTest.cpp - Buffer plans, stash accounting, peak bytes --------===//
#include "frontends/Models.h"
#include "ir/IRText.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/memory/MemoryPlan.h"
#include "passes/pipeline/ParallelCompile.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

Graph parse(llvm::StringRef text) {
  auto g = parseGraph(text);
  EXPECT_TRUE(bool(g)) << toString(g.takeError());
  return std::move(*g);
}

int64_t offsetOf(const Graph &g, const BufferPlan &p, llvm::StringRef name) {
  return p.offsets[g.lookup(name)];
}

// Liveness (definition to last use, outputs to the end) and first-fit,
// largest first, by hand:
//   %a  64 B  nodes [0, 2]     %b 128 B  [1, 2]
//   %c 192 B  [2, 3]           %d 192 B  [3, end] (output)
// %c at 0; %d overlaps %c at node 3 -> 192; %b overlaps %c only -> 192
// (free of %d); %a overlaps %c and %b -> 320. Arena 384 B; at node 2, %a,
// %b and %c are live together: 384 B.
constexpr llvm::StringLiteral kChain = R"(
graph @chain(%x: f32[16]) {
  %a = tanh(%x) : f32[16]
  %b = concat(%x, %x) {dim=0} : f32[32]
  %c = concat(%a, %b) {dim=0} : f32[48]
  %d = tanh(%c) : f32[48]
  return %d
}
)";

TEST(BufferPlan, FirstFitLargestFirstByHand) {
  Graph g = parse(kChain);
  BufferPlan p = planBuffers(g);
  EXPECT_EQ(offsetOf(g, p, "c"), 0);
  EXPECT_EQ(offsetOf(g, p, "d"), 192);
  EXPECT_EQ(offsetOf(g, p, "b"), 192);
  EXPECT_EQ(offsetOf(g, p, "a"), 320);
  EXPECT_EQ(offsetOf(g, p, "x"), -1); // inputs are the caller's
  EXPECT_EQ(p.arenaBytes, 384);
  EXPECT_EQ(p.peakLiveBytes, 384);
}

TEST(BufferPlan, OutputsOutsideTheArena) {
  Graph g = parse(kChain);
  BufferPlan p = planBuffers(g, {/*outputsInArena=*/false});
  EXPECT_EQ(offsetOf(g, p, "d"), -1);
  EXPECT_EQ(offsetOf(g, p, "c"), 0);
  EXPECT_EQ(p.arenaBytes, 384);
}

TEST(BufferPlan, AlignsAndReusesFreedBuffers) {
  // %a dies at node 1, so %c reuses its (64-byte aligned) buffer.
  Graph g = parse(R"(
graph @reuse(%x: f32[3]) {
  %a = tanh(%x) : f32[3]
  %b = exp(%a) : f32[3]
  %c = tanh(%b) : f32[3]
  return %c
}
)");
  BufferPlan p = planBuffers(g);
  EXPECT_EQ(offsetOf(g, p, "a"), 0);
  EXPECT_EQ(offsetOf(g, p, "b"), 64);
  EXPECT_EQ(offsetOf(g, p, "c"), 0);
  EXPECT_EQ(p.arenaBytes, 128);
}

TEST(Activations, StashIsWhatTheBackwardReads) {
  Graph g = parse(R"(
graph @m(%x: f32[2,4], %w: f32[4,3] {param}) {
  %h = matmul(%x, %w) : f32[2,3]
  %t = tanh(%h) : f32[2,3]
  %l = reduce_sum(%t) {axes=[0, 1]} : f32[]
  return %l
}
)");
  ASSERT_FALSE(bool(differentiate(g)));
  // tanh's gradient reads its result; the weight gradient reads %x, an
  // input (never stashed); %h is read by no backward node.
  llvm::SmallVector<ValueId> stash = stashedValues(g);
  ASSERT_EQ(stash.size(), 1u);
  EXPECT_EQ(g.value(stash[0]).name, "t");
  EXPECT_EQ(stashBytes(g), 24);
}

TEST(Activations, MegatronModelCountsMasksAndAttentionScores) {
  Graph g = parse(R"(
graph @a(%q: f16[2,8,4,16], %k: f16[2,8,4,16], %v: f16[2,8,4,16]) {
  %o = attention(%q, %k, %v) {causal=true, scale=0.25} : f16[2,8,4,16]
  %r = attention(%q, %k, %v) {causal=true, recompute=true, scale=0.25} : f16[2,8,4,16]
  %d = dropout(%o) {p=0.1, stream=0} : f16[2,8,4,16]
  return %d, %r
}
)");
  // Scores: B * heads * S * S = 2 * 4 * 8 * 8 = 512, 5 bytes each in f16;
  // the recomputed one keeps nothing; the dropout mask 1 byte per element.
  EXPECT_EQ(internalSavedBytes(g, g.node(0), SavedStateModel::Megatron), 2560);
  EXPECT_EQ(internalSavedBytes(g, g.node(1), SavedStateModel::Megatron), 0);
  EXPECT_EQ(internalSavedBytes(g, g.node(2), SavedStateModel::Megatron), 1024);
  for (int n = 0; n < 3; ++n)
    EXPECT_EQ(internalSavedBytes(g, g.node(n), SavedStateModel::Strata), 0);
}

pb::ModelSpec gptSpec(int64_t layers) {
  pb::ModelSpec spec;
  spec.set_family(pb::ModelSpec::GPT);
  spec.set_vocab_size(16);
  spec.set_make_vocab_size_divisible_by(8);
  spec.set_hidden(8);
  spec.set_layers(layers);
  spec.set_heads(2);
  spec.set_seq_len(4);
  spec.set_micro_batch(2);
  spec.set_dropout(0.1);
  return spec;
}

CompiledPipeline compile(const ParallelCompileOptions &o, int64_t layers = 4) {
  auto c =
      compilePipeline(buildModelGraph(resolveModelSpec(gptSpec(layers))), o);
  EXPECT_TRUE(bool(c)) << toString(c.takeError());
  return std::move(*c);
}

TEST(MemoryPlan, PeakFollowsTheSchedule) {
  ParallelCompileOptions o;
  o.pp = 4;
  o.microbatches = 8;
  for (ScheduleKind k : {ScheduleKind::OneFOneB, ScheduleKind::GPipe}) {
    o.schedule = {k, 1};
    CompiledPipeline c = compile(o);
    for (const RankMemory &m : c.memory.ranks) {
      int64_t inFlight = k == ScheduleKind::GPipe ? 8 : 4 - m.rank;
      EXPECT_EQ(m.inFlight, std::vector<int64_t>{inFlight});
      // The peak is in the first backward, every slot full.
      EXPECT_EQ(m.peakAt, "B0");
      EXPECT_EQ(m.maxStash, inFlight * m.stashPerMicrobatch[0]);
      EXPECT_EQ(m.stash, m.maxStash);
      EXPECT_EQ(m.workspace, c.memory.backward[m.rank].arenaBytes);
      EXPECT_EQ(m.peak, m.staticBytes() + m.stash + m.workspace);
      EXPECT_EQ(m.stashPerMicrobatch[0],
                forwardStashBytes(c.pipeline.stages[m.rank].forward,
                                  m.rank == 3, SavedStateModel::Strata));
    }
  }
}

TEST(MemoryPlan, TiedParameterStateLivesOnItsOwner) {
  ParallelCompileOptions o;
  o.pp = 2;
  o.microbatches = 2;
  CompiledPipeline c = compile(o);
  const int64_t wte = 16 * 8 * 4, wpe = 4 * 8 * 4, ln = 8 * 4;
  const int64_t block =
      (4 * 8 * 8 + 4 * 8) * 4 + 2 * 8 * 32 * 4 + (32 + 8) * 4 + 4 * ln;
  // Rank 0: wte, wpe, blocks 0-1; rank 1: wte (tied), blocks 2-3, ln_f.
  EXPECT_EQ(c.memory.ranks[0].parameters, wte + wpe + 2 * block);
  EXPECT_EQ(c.memory.ranks[1].parameters, wte + 2 * block + 2 * ln);
  EXPECT_EQ(c.memory.ranks[0].gradients, c.memory.ranks[0].parameters);
  EXPECT_EQ(c.memory.ranks[0].optimizerState, 2 * c.memory.ranks[0].parameters);
  EXPECT_EQ(c.memory.ranks[1].optimizerState,
            2 * (c.memory.ranks[1].parameters - wte));
  EXPECT_EQ(c.memory.ranks[0].masterParams, 0);
}

TEST(MemoryPlan, RecomputationShrinksTheStash) {
  ParallelCompileOptions o;
  o.microbatches = 1;
  int64_t none = compile(o).memory.ranks[0].stashPerMicrobatch[0];
  o.recompute = RecomputeMode::Full;
  int64_t full = compile(o).memory.ranks[0].stashPerMicrobatch[0];
  // Each of 4 blocks keeps its 256-byte input instead of 4 KiB.
  EXPECT_EQ(none - full, 4 * (4096 - 256));
}

} // namespace
