//===- PipelineTest.cpp - Stage cuts, stage programs, plan verification ---===//
#include "frontends/Models.h"
#include "ir/IRText.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/pipeline/Bindings.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/ParallelCompile.h"

#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

pb::ModelSpec spec(pb::ModelSpec::Family family, int64_t layers,
                   int64_t vocab = 16) {
  pb::ModelSpec s;
  s.set_family(family);
  s.set_vocab_size(vocab);
  s.set_make_vocab_size_divisible_by(8);
  s.set_hidden(8);
  s.set_layers(layers);
  s.set_heads(2);
  s.set_seq_len(4);
  s.set_micro_batch(2);
  s.set_dropout(family == pb::ModelSpec::GPT ? 0.1 : 0.0);
  return s;
}

Graph forward(const pb::ModelSpec &s) {
  return buildModelGraph(resolveModelSpec(s));
}

CompiledPipeline compile(const pb::ModelSpec &s,
                         const ParallelCompileOptions &o) {
  auto c = compilePipeline(forward(s), o);
  EXPECT_TRUE(bool(c)) << toString(c.takeError());
  return std::move(*c);
}

ParallelCompileOptions pipelined(int64_t pp, int64_t m,
                                 ScheduleSpec sched = {}) {
  ParallelCompileOptions o;
  o.pp = pp;
  o.microbatches = m;
  o.schedule = sched;
  return o;
}

TEST(Pipeline, EveryNodeRunsInExactlyOneProgram) {
  for (auto [pp, V] : {std::pair{1, 1}, {2, 1}, {4, 1}, {2, 2}}) {
    ScheduleSpec sched =
        V > 1 ? ScheduleSpec{ScheduleKind::Interleaved, V} : ScheduleSpec{};
    CompiledPipeline c =
        compile(spec(pb::ModelSpec::GPT, 4), pipelined(pp, 4, sched));
    const Graph &micro = c.micro;
    // Forward nodes in one F, backward nodes in one B (by result name);
    // the tied wte's gradient sum is split into each holder's part.
    llvm::StringMap<int> seen;
    double flops = 0;
    for (const PipelineStage &s : c.pipeline.stages) {
      for (const Graph *g : {&s.forward, &s.backward})
        for (const Node &n : g->nodes())
          if (n.op != OpKind::Send && n.op != OpKind::Recv &&
              !n.results.empty())
            ++seen[g->value(n.results[0]).name];
      flops += s.forwardFlops + s.backwardFlops;
    }
    double total = 0;
    for (const Node &n : micro.nodes()) {
      std::string name = micro.value(n.results[0]).name;
      // Split over stages, wte's gradient sum moves to the optimizer.
      if (name != "grad.wte" || (pp == 1 && V == 1))
        total += nodeFlops(micro, n);
      if (name == "grad.wte" || name.rfind("d.wte.", 0) == 0)
        continue;
      EXPECT_EQ(seen.lookup(name), 1) << name << " pp=" << pp << " V=" << V;
    }
    EXPECT_EQ(seen.lookup("grad.wte"), pp > 1 || V > 1 ? 2 : 1);
    EXPECT_NEAR(flops, total, 1e-9 * total);
  }
}

TEST(Pipeline, StagesAreContiguousAndCoverTheModel) {
  CompiledPipeline c = compile(spec(pb::ModelSpec::GPT, 5), pipelined(4, 8));
  int64_t next = 0;
  for (const PipelineStage &s : c.pipeline.stages) {
    EXPECT_EQ(s.firstLayer, next);
    EXPECT_GE(s.numLayers, 1);
    next += s.numLayers;
    EXPECT_EQ(s.embedding, s.index == 0);
    EXPECT_EQ(s.head, s.index == 3);
  }
  EXPECT_EQ(next, 5);
}

TEST(Pipeline, ALargeHeadLeavesTheLastStageFewerBlocks) {
  // A 50k vocabulary on width 8: the LM head and loss cost several blocks.
  CompiledPipeline c =
      compile(spec(pb::ModelSpec::GPT, 8, 50304), pipelined(2, 4));
  EXPECT_LT(c.pipeline.stages[1].numLayers, c.pipeline.stages[0].numLayers);
  EXPECT_NE(c.pipeline.balanceReport.find("uneven: 8 blocks would divide "
                                          "evenly into 2 stages, but"),
            std::string::npos)
      << c.pipeline.balanceReport;
}

TEST(Pipeline, TiedEmbeddingIsSharedByTheFirstAndLastRank) {
  CompiledPipeline gpt = compile(spec(pb::ModelSpec::GPT, 4), pipelined(4, 4));
  ASSERT_EQ(gpt.pipeline.tied.size(), 1u);
  EXPECT_EQ(gpt.pipeline.tied[0].name, "wte");
  EXPECT_EQ(gpt.pipeline.tied[0].ranks, (std::vector<int64_t>{0, 3}));
  // Only the owner keeps AdamW moments for it.
  EXPECT_NE(gpt.pipeline.optimizers[0].lookup("adam_m.wte"), kNoValue);
  EXPECT_EQ(gpt.pipeline.optimizers[3].lookup("adam_m.wte"), kNoValue);
  EXPECT_NE(gpt.pipeline.optimizers[3].lookup("new.wte"), kNoValue);
  CompiledPipeline llama =
      compile(spec(pb::ModelSpec::LLAMA, 4), pipelined(2, 2));
  EXPECT_TRUE(llama.pipeline.tied.empty());
}

TEST(Pipeline, StashIsWhatBackwardReadsFromForward) {
  CompiledPipeline c = compile(spec(pb::ModelSpec::GPT, 4), pipelined(2, 2));
  for (const PipelineStage &s : c.pipeline.stages) {
    llvm::StringSet<> stash;
    for (const std::string &n : s.stash)
      stash.insert(n);
    // Every B input that F computes or receives is in the stash; the
    // others are the gradient buffers B accumulates into.
    for (ValueId v : s.backward.inputs()) {
      const Value &in = s.backward.value(v);
      llvm::StringRef name = in.name;
      if (in.isParam() || name == "tokens" || name == "labels")
        continue;
      if (name.startswith("grad.") && name.endswith(".acc")) {
        EXPECT_NE(s.backward.lookup(name.drop_back(4)), kNoValue) << in.name;
        continue;
      }
      EXPECT_TRUE(stash.contains(in.name)) << in.name;
    }
  }
  // Stage 1 keeps the block input it received: block 2's first norm's
  // gradient reads it.
  const std::vector<std::string> &stash1 = c.pipeline.stages[1].stash;
  EXPECT_NE(llvm::find(stash1, "layers.1.mlp.residual.add"), stash1.end());
  for (const std::string &name : c.pipeline.stages[0].stash)
    EXPECT_EQ(name.find("layers.2."), std::string::npos) << name;
}

TEST(Pipeline, VerifierCatchesUnmatchedMessages) {
  CompiledPipeline c = compile(spec(pb::ModelSpec::GPT, 4), pipelined(2, 2));
  EXPECT_FALSE(bool(verifyPipelinePlan(c.pipeline)));
  PipelinePlan broken = c.pipeline;
  for (size_t i = 0; i < broken.stages[1].forward.nodes().size(); ++i) {
    Node &n = broken.stages[1].forward.node(i);
    if (n.op == OpKind::Recv)
      n.attrs.set("peer", int64_t(1));
  }
  EXPECT_EQ(toString(verifyPipelinePlan(broken)),
            "pipeline plan: stage 0 F sends tag 0 to rank 1 but stage 1 F "
            "(rank 1) receives it from rank 1");
  broken = c.pipeline;
  for (size_t i = 0; i < broken.stages[0].forward.nodes().size(); ++i) {
    Node &n = broken.stages[0].forward.node(i);
    if (n.op == OpKind::Send)
      n.attrs.set("tag", int64_t(99));
  }
  EXPECT_EQ(toString(verifyPipelinePlan(broken)),
            "pipeline plan: stage 0 F: send with tag 99 has no matching recv");
}

TEST(Pipeline, CutErrorsNameTheProblem) {
  Graph g = forward(spec(pb::ModelSpec::GPT, 2));
  PipelineOptions o;
  o.pp = 2;
  EXPECT_EQ(toString(buildPipeline(g, o).takeError()),
            "pipeline: the graph has no backward nodes (the pipeline cuts the "
            "microbatch graph: run autodiff first)");
  auto odd = parseGraph(R"(
graph @odd(%x: f32[4], %w: f32[4] {param}) {
  %y = mul(%x, %w) : f32[4]  # layers.0.mlp
  %z = tanh(%y) : f32[4]  # adapter
  %l = reduce_sum(%z) {axes=[0]} : f32[]  # loss
  return %l
}
)");
  ASSERT_TRUE(bool(odd));
  ASSERT_FALSE(bool(differentiate(*odd)));
  o.pp = 1;
  EXPECT_EQ(toString(buildPipeline(*odd, o).takeError()),
            "pipeline: %z = tanh (adapter): the pipeline places nodes by "
            "scope, and this one is none of embed, layers.<i>, ln_f, lm_head, "
            "loss (their sub-scopes included)");
}

TEST(ParallelCompile, AutoRecomputesUntilEveryRankFits) {
  ParallelCompileOptions o = pipelined(2, 8);
  CompiledPipeline base = compile(spec(pb::ModelSpec::GPT, 4), o);
  int64_t most = 0;
  for (const RankMemory &m : base.memory.ranks)
    most = std::max(most, m.peak);
  o.recompute = RecomputeMode::Auto;
  o.memoryBudget = most - 1024;
  CompiledPipeline c = compile(spec(pb::ModelSpec::GPT, 4), o);
  EXPECT_FALSE(c.recomputedLayers.empty());
  for (const RankMemory &m : c.memory.ranks)
    EXPECT_LE(m.peak, o.memoryBudget);
  // The cut is kept while choosing blocks.
  for (size_t s = 0; s < c.pipeline.stages.size(); ++s)
    EXPECT_EQ(c.pipeline.stages[s].numLayers,
              base.pipeline.stages[s].numLayers);
}

} // namespace

namespace {
/// "role name" of each binding, for compact expectations.
std::vector<std::string> roles(const std::vector<Binding> &bs) {
  std::vector<std::string> out;
  for (const Binding &b : bs)
    out.push_back(roleName(b.role).str() +
                  (b.name.empty() ? "" : " " + b.name));
  return out;
}
} // namespace

// The binding table: every input and output of every program has a role and
// a logical name, from the compiler; the runtime binds by it.
TEST(Bindings, EveryProgramInputAndOutputHasARole) {
  ParallelCompileOptions o = pipelined(2, 2);
  o.dp = 2;
  o.distributedOptimizer = true;
  CompiledPipeline c = compile(spec(pb::ModelSpec::GPT, 2), o);
  const PipelinePlan &p = c.pipeline;
  const PipelineStage &head = p.stages.back();
  ASSERT_FALSE(head.forwardBindings.outputs.empty());
  EXPECT_EQ(head.forwardBindings.outputs[0].role, Role::Loss);
  for (size_t o = 1; o < head.forwardBindings.outputs.size(); ++o) {
    EXPECT_EQ(head.forwardBindings.outputs[o].role, Role::Stash);
    EXPECT_EQ(head.forwardBindings.outputs[o].name, head.stash[o - 1]);
  }
  std::vector<std::string> in = roles(p.stages[0].forwardBindings.inputs);
  EXPECT_NE(llvm::find(in, "parameter wte"), in.end());
  EXPECT_NE(llvm::find(in, "tokens"), in.end());
  std::vector<std::string> grads = roles(p.stages[0].backwardBindings.outputs);
  EXPECT_NE(llvm::find(grads, "gradient wte"), grads.end());
  // Rank 0 owns the tied wte: its ZeRO-1 optimizer reads the moments and
  // writes every new state.
  std::vector<std::string> opt = roles(p.optimizerBindings[0].inputs),
                           out = roles(p.optimizerBindings[0].outputs);
  for (const char *want : {"lr", "step", "gradient wte", "adam_m wte",
                           "adam_v wte", "parameter wpe"})
    EXPECT_NE(llvm::find(opt, want), opt.end()) << want;
  for (const char *want :
       {"grad_norm", "new_parameter wte", "new_adam_m wte", "new_adam_v wte"})
    EXPECT_NE(llvm::find(out, want), out.end()) << want;
  // Rank 1 receives wte's new value, holding no moments for it.
  std::vector<std::string> out1 = roles(p.optimizerBindings[1].outputs);
  EXPECT_NE(llvm::find(out1, "new_parameter wte"), out1.end());
  EXPECT_EQ(llvm::find(out1, "new_adam_m wte"), out1.end());
}

// Each binding says how its value is laid out and which pipeline rank owns
// it: the tied wte read by the head (rank 1) is owned by rank 0, whose
// optimizer updates it; ZeRO-1 moments are split over dp, parameters not.
TEST(Bindings, SayTheShardingAndTheOwningRank) {
  ParallelCompileOptions o = pipelined(2, 2);
  o.tp = 2;
  o.dp = 2;
  o.distributedOptimizer = true;
  CompiledPipeline c = compile(spec(pb::ModelSpec::GPT, 2), o);
  const PipelinePlan &p = c.pipeline;
  auto find = [](const std::vector<Binding> &bs, Role role,
                 llvm::StringRef name) -> const Binding * {
    for (const Binding &b : bs)
      if (b.role == role && b.name == name)
        return &b;
    return nullptr;
  };
  const ProgramBindings &headF = p.stages.back().forwardBindings;
  const Binding *wte = find(headF.inputs, Role::Parameter, "wte");
  const Binding *lnf = find(headF.inputs, Role::Parameter, "ln_f.w");
  ASSERT_TRUE(wte && lnf);
  EXPECT_EQ(wte->owner, 0);
  EXPECT_EQ(lnf->owner, 1);
  const Binding *labels = find(headF.inputs, Role::Labels, "");
  ASSERT_TRUE(labels);
  EXPECT_EQ(labels->owner, 1);
  // wte is split over tp by vocabulary rows, not over dp.
  ASSERT_EQ(wte->sharding.dims.size(), 2u);
  EXPECT_EQ(wte->sharding.dims[0], (llvm::SmallVector<std::string, 1>{"tp"}));
  const Binding *m = find(p.optimizerBindings[0].inputs, Role::AdamM, "wte");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->owner, 0);
  bool splitOverDp = false;
  for (const auto &dim : m->sharding.dims)
    splitOverDp |= llvm::is_contained(dim, "dp");
  EXPECT_TRUE(splitOverDp);
}

TEST(Bindings, AValueOfNoRoleIsAnError) {
  Graph g;
  g.name = "opt";
  ValueId x = g.addInput("mystery", TensorType{DType::F32, {2}});
  g.addOutput(x);
  auto b = bindProgram(g, ProgramKind::Optimizer, nullptr, 0, {});
  ASSERT_FALSE(bool(b));
  EXPECT_EQ(toString(b.takeError()),
            "@opt: input %mystery has no role the runtime can bind");
}
