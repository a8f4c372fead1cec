//===- PipelineProto.cpp - Compiled pipelines in the Plan, and back
//--------===//
#include "tools/strata/PipelineProto.h"

#include "codegen/KernelLibrary.h"
#include "ir/Verifier.h"
#include "proto/GraphProto.h"

namespace strata {

namespace {
void storeBuffers(pb::BufferPlan *out, const BufferPlan &b) {
  for (int64_t o : b.offsets)
    out->add_offsets(o);
  out->set_arena_bytes(b.arenaBytes);
  for (ValueId r : b.root)
    out->add_roots(r);
}

void storeBindings(pb::ProgramBindings *out, const ProgramBindings &b) {
  for (auto [from, to] : {std::pair{&b.inputs, out->mutable_inputs()},
                          std::pair{&b.outputs, out->mutable_outputs()}})
    for (const Binding &x : *from) {
      pb::Binding *y = to->Add();
      y->set_role(pb::Binding::Role(int(x.role)));
      y->set_name(x.name);
      *y->mutable_sharding() = shardingToProto(x.sharding);
      y->set_owner(x.owner);
    }
}

/// Stored bindings, checked against what the compiler gives `g` today.
llvm::Expected<ProgramBindings>
loadBindings(const pb::ProgramBindings &in, const Graph &g, ProgramKind kind,
             const PipelineStage *stage, int64_t rank,
             llvm::ArrayRef<TiedParam> tied, const llvm::Twine &what) {
  ProgramBindings b;
  for (auto [from, to] : {std::pair{&in.inputs(), &b.inputs},
                          std::pair{&in.outputs(), &b.outputs}})
    for (const pb::Binding &x : *from)
      to->push_back({Role(x.role()), x.name(), shardingFromProto(x.sharding()),
                     x.owner()});
  auto want = bindProgram(g, kind, stage, rank, tied);
  if (!want)
    return want.takeError();
  if (!(b == *want))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        what + ": the stored binding table does not match the program "
               "(recompile the plan with `strata compile`)");
  return b;
}

/// A stored buffer plan of `g`, checked against it: used as stored.
llvm::Expected<BufferPlan> loadBuffers(const pb::BufferPlan &in, const Graph &g,
                                       const llvm::Twine &what) {
  BufferPlan b;
  b.offsets.assign(in.offsets().begin(), in.offsets().end());
  b.root.assign(in.roots().begin(), in.roots().end());
  b.arenaBytes = in.arena_bytes();
  if (auto e = verifyBufferPlan(g, b))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        what + ": " + llvm::toString(std::move(e)) +
            " (recompile the plan with `strata compile`)");
  return b;
}
} // namespace

void storePipeline(pb::Plan &plan, const CompiledPipeline &c,
                   const ParallelCompileOptions &o) {
  const PipelinePlan &p = c.pipeline;
  pb::ParallelConfig *cfg = plan.mutable_parallel();
  cfg->set_tp(o.tp);
  cfg->set_dp(o.dp);
  cfg->set_pp(o.pp);
  cfg->set_sp(o.sp);
  cfg->set_microbatches(o.microbatches);
  cfg->set_schedule(o.schedule.str());
  cfg->set_recompute(recomputeModeName(o.recompute).str());
  for (int64_t l : c.recomputedLayers)
    cfg->add_recomputed_layers(l);
  cfg->set_memory_budget(std::max<int64_t>(o.memoryBudget, 0));
  cfg->set_fusion(o.fusion);
  cfg->set_distributed_optimizer(o.distributedOptimizer);

  pb::Pipeline *pipe = plan.mutable_pipeline();
  for (const PipelineStage &s : p.stages) {
    pb::PipelineStage *ps = pipe->add_stages();
    ps->set_index(s.index);
    ps->set_rank(s.rank);
    ps->set_chunk(s.chunk);
    ps->set_first_layer(s.firstLayer);
    ps->set_num_layers(s.numLayers);
    ps->set_embedding(s.embedding);
    ps->set_head(s.head);
    *ps->mutable_forward() = graphToProto(s.forward);
    *ps->mutable_backward() = graphToProto(s.backward);
    for (const std::string &name : s.stash)
      ps->add_stash(name);
    ps->set_forward_flops(s.forwardFlops);
    ps->set_backward_flops(s.backwardFlops);
    storeBindings(ps->mutable_forward_bindings(), s.forwardBindings);
    storeBindings(ps->mutable_backward_bindings(), s.backwardBindings);
  }
  for (const Graph &g : p.optimizers)
    *pipe->add_optimizers() = graphToProto(g);
  for (const ProgramBindings &b : p.optimizerBindings)
    storeBindings(pipe->add_optimizer_bindings(), b);
  for (const TiedParam &t : p.tied) {
    pb::TiedParameter *tp = pipe->add_tied();
    tp->set_name(t.name);
    for (int64_t r : t.ranks)
      tp->add_ranks(r);
  }
  pipe->set_balance_report(p.balanceReport);
  *pipe->mutable_micro() = graphToProto(c.micro);

  const Schedule &s = p.schedule;
  pb::Schedule *ps = plan.mutable_schedule();
  ps->set_kind(s.spec.str());
  ps->set_pp(s.pp);
  ps->set_microbatches(s.microbatches);
  ps->set_virtual_stages(s.spec.virtualStages);
  for (const std::vector<Instr> &rank : s.ranks) {
    pb::Schedule::Rank *pr = ps->add_ranks();
    for (const Instr &i : rank) {
      pb::Instruction *pi = pr->add_instructions();
      pi->set_kind(i.kind == Instr::Forward    ? pb::Instruction::FORWARD
                   : i.kind == Instr::Backward ? pb::Instruction::BACKWARD
                                               : pb::Instruction::OPTIMIZER);
      pi->set_microbatch(i.microbatch);
      pi->set_chunk(i.chunk);
    }
  }
  ps->set_bubble_fraction(idealBubbleFraction(s));

  const MemoryPlan &m = c.memory;
  pb::MemoryPlan *pm = plan.mutable_memory();
  pm->set_saved_state_model(savedStateModelName(m.model).str());
  for (const BufferPlan &b : m.forward)
    storeBuffers(pm->add_forward(), b);
  for (const BufferPlan &b : m.backward)
    storeBuffers(pm->add_backward(), b);
  for (const BufferPlan &b : m.optimizer)
    storeBuffers(pm->add_optimizer(), b);
  for (const RankMemory &r : m.ranks) {
    pb::MemoryPlan::Rank *pr = pm->add_ranks();
    pr->set_rank(r.rank);
    pr->set_parameters(r.parameters);
    pr->set_gradients(r.gradients);
    pr->set_optimizer_state(r.optimizerState);
    pr->set_master_params(r.masterParams);
    pr->set_stash(r.stash);
    pr->set_workspace(r.workspace);
    pr->set_peak(r.peak);
    pr->set_peak_at(r.peakAt);
    for (int64_t b : r.stashPerMicrobatch)
      pr->add_stash_per_microbatch(b);
    for (int64_t n : r.inFlight)
      pr->add_in_flight(n);
    pr->set_max_stash(r.maxStash);
  }
  for (const auto &[unit, bytes] : stashBytesByUnit(c.micro, m.model))
    (*pm->mutable_stash_per_unit())[unit] = bytes;
}

llvm::Expected<CompiledPipeline> loadPipeline(const pb::Plan &plan) {
  auto graph = [](const pb::Graph &proto,
                  const llvm::Twine &what) -> llvm::Expected<Graph> {
    auto g = graphFromProto(proto);
    if (!g)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     what + ": " + toString(g.takeError()));
    if (auto e = verifyGraph(*g))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     what + ": " + toString(std::move(e)));
    return g;
  };
  const pb::Pipeline &pipe = plan.pipeline();
  CompiledPipeline c;
  auto micro = graph(pipe.micro(), "the microbatch graph");
  if (!micro)
    return micro.takeError();
  c.micro = std::move(*micro);
  PipelinePlan &p = c.pipeline;
  p.pp = std::max<int64_t>(plan.parallel().pp(), 1);
  for (const pb::TiedParameter &t : pipe.tied())
    p.tied.push_back({t.name(), {t.ranks().begin(), t.ranks().end()}});
  for (const pb::PipelineStage &ps : pipe.stages()) {
    PipelineStage s;
    s.index = ps.index();
    s.rank = ps.rank();
    s.chunk = ps.chunk();
    s.firstLayer = ps.first_layer();
    s.numLayers = ps.num_layers();
    s.embedding = ps.embedding();
    s.head = ps.head();
    auto f = graph(ps.forward(), "stage " + llvm::Twine(s.index) + " F");
    if (!f)
      return f.takeError();
    auto b = graph(ps.backward(), "stage " + llvm::Twine(s.index) + " B");
    if (!b)
      return b.takeError();
    s.forward = std::move(*f);
    s.backward = std::move(*b);
    s.stash.assign(ps.stash().begin(), ps.stash().end());
    s.forwardFlops = ps.forward_flops();
    s.backwardFlops = ps.backward_flops();
    auto fb =
        loadBindings(ps.forward_bindings(), s.forward, ProgramKind::Forward, &s,
                     s.rank, p.tied, "stage " + llvm::Twine(s.index) + " F");
    if (!fb)
      return fb.takeError();
    auto bb = loadBindings(ps.backward_bindings(), s.backward,
                           ProgramKind::Backward, &s, s.rank, p.tied,
                           "stage " + llvm::Twine(s.index) + " B");
    if (!bb)
      return bb.takeError();
    s.forwardBindings = std::move(*fb);
    s.backwardBindings = std::move(*bb);
    p.stages.push_back(std::move(s));
  }
  for (int r = 0; r < pipe.optimizers_size(); ++r) {
    auto g = graph(pipe.optimizers(r), "rank " + llvm::Twine(r) + " optimizer");
    if (!g)
      return g.takeError();
    if (r >= pipe.optimizer_bindings_size())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "rank " + llvm::Twine(r) +
              " optimizer has no binding table "
              "(recompile the plan with `strata compile`)");
    auto b = loadBindings(pipe.optimizer_bindings(r), *g,
                          ProgramKind::Optimizer, nullptr, r, p.tied,
                          "rank " + llvm::Twine(r) + " optimizer");
    if (!b)
      return b.takeError();
    p.optimizers.push_back(std::move(*g));
    p.optimizerBindings.push_back(std::move(*b));
  }
  const pb::MemoryPlan &pm = plan.memory();
  if (size_t(pm.forward_size()) != p.stages.size() ||
      size_t(pm.backward_size()) != p.stages.size() ||
      size_t(pm.optimizer_size()) != p.optimizers.size())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the plan has no buffer plan for every program (recompile it with "
        "`strata compile`)");
  for (size_t s = 0; s < p.stages.size(); ++s) {
    auto f = loadBuffers(pm.forward(s), p.stages[s].forward,
                         "stage " + llvm::Twine(s) + " F");
    if (!f)
      return f.takeError();
    auto b = loadBuffers(pm.backward(s), p.stages[s].backward,
                         "stage " + llvm::Twine(s) + " B");
    if (!b)
      return b.takeError();
    c.memory.forward.push_back(std::move(*f));
    c.memory.backward.push_back(std::move(*b));
  }
  for (size_t r = 0; r < p.optimizers.size(); ++r) {
    auto o = loadBuffers(pm.optimizer(r), p.optimizers[r],
                         "rank " + llvm::Twine(r) + " optimizer");
    if (!o)
      return o.takeError();
    c.memory.optimizer.push_back(std::move(*o));
  }
  auto sched = scheduleFromProto(plan.schedule());
  if (!sched)
    return sched.takeError();
  p.schedule = std::move(*sched);
  p.balanceReport = pipe.balance_report();
  for (int64_t l : plan.parallel().recomputed_layers())
    c.recomputedLayers.push_back(l);
  if (auto e = verifyPipelinePlan(p))
    return e;
  return c;
}

llvm::Expected<Schedule> scheduleFromProto(const pb::Schedule &p) {
  auto spec = parseScheduleSpec(p.kind());
  if (!spec)
    return spec.takeError();
  Schedule s;
  s.spec = *spec;
  s.pp = p.pp();
  s.microbatches = p.microbatches();
  for (const pb::Schedule::Rank &r : p.ranks()) {
    std::vector<Instr> &out = s.ranks.emplace_back();
    for (const pb::Instruction &i : r.instructions())
      out.push_back({i.kind() == pb::Instruction::FORWARD    ? Instr::Forward
                     : i.kind() == pb::Instruction::BACKWARD ? Instr::Backward
                                                             : Instr::Optimizer,
                     int32_t(i.microbatch()), int32_t(i.chunk())});
  }
  if (auto e = validateSchedule(s))
    return e;
  return s;
}

namespace {
/// The programs whose kernels a plan carries, tagged as KernelEntry.program
/// names them.
std::vector<codegen::TaggedProgram> taggedPrograms(const CompiledPipeline &c) {
  std::vector<codegen::TaggedProgram> programs;
  for (const PipelineStage &s : c.pipeline.stages) {
    std::string j = std::to_string(s.index);
    programs.push_back({"s" + j + "f", &s.forward});
    programs.push_back({"s" + j + "b", &s.backward});
  }
  for (size_t r = 0; r < c.pipeline.optimizers.size(); ++r)
    programs.push_back(
        {"r" + std::to_string(r) + "o", &c.pipeline.optimizers[r]});
  return programs;
}
} // namespace

llvm::Error checkKernels(const pb::Plan &plan, const CompiledPipeline &c) {
  for (const pb::KernelLibrary &k : plan.kernels()) {
    auto target = codegen::parseTarget(k.target());
    if (!target)
      return target.takeError();
    auto lib = codegen::renderLibrary(taggedPrograms(c), *target);
    if (!lib)
      return lib.takeError();
    if (lib->sha256 != k.sha256())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "the plan's " + k.target() +
              " kernels are not what this strata generates for the plan's "
              "programs (written by strata " +
              plan.strata_version() + "; recompile the plan with this strata)");
  }
  return llvm::Error::success();
}

llvm::Error storeKernels(pb::Plan &plan, const CompiledPipeline &c) {
  std::vector<codegen::TaggedProgram> programs = taggedPrograms(c);
  for (codegen::Target t : {codegen::Target::Cpp, codegen::Target::Cuda}) {
    auto lib = codegen::renderLibrary(programs, t);
    if (!lib)
      return lib.takeError();
    if (lib->entries.empty())
      return llvm::Error::success();
    pb::KernelLibrary *out = plan.add_kernels();
    out->set_target(codegen::targetName(t).str());
    out->set_source(lib->source);
    out->set_sha256(lib->sha256);
    for (const codegen::KernelEntry &e : lib->entries) {
      pb::KernelEntry *pe = out->add_entries();
      pe->set_program(e.program);
      pe->set_kernel(e.kernel);
      pe->set_symbol(e.symbol);
      pe->set_scope(e.scope);
    }
  }
  return llvm::Error::success();
}

} // namespace strata
