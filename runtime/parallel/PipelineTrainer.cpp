//===- PipelineTrainer.cpp - Training a pipelined plan on CPU devices ------===//
#include "runtime/parallel/PipelineTrainer.h"

#include "runtime/comm/CollectiveKernels.h"
#include "runtime/parallel/ParallelInterpreter.h"
#include "runtime/parallel/PipelineRankState.h"
#include "runtime/parallel/SendCompletion.h"
#include "runtime/parallel/Sharded.h"
#include "runtime/train/ParamInit.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Whether output `out` of `g` may be written straight into the buffer of
/// input `in` (the state it replaces; kNoValue: none): its node is an
/// elementwise in-place update or a recv, and no later node reads `in`.
bool writesInPlace(const Graph &g, ValueId out, ValueId in) {
  int32_t d = g.value(out).defNode;
  if (d < 0 || (g.node(d).op != OpKind::AdamWUpdate &&
                g.node(d).op != OpKind::Recv))
    return false;
  for (size_t i = d; in != kNoValue && i < g.nodes().size(); ++i)
    if (llvm::is_contained(g.node(i).operands, in) &&
        !(int32_t(i) == d && g.node(d).op == OpKind::AdamWUpdate))
      return false;
  return true;
}
} // namespace

Mesh pipelineMesh(const ParallelConfig &c) {
  Mesh m;
  if (c.pp > 1)
    m.axes.push_back({"pp", c.pp});
  m.axes.push_back({"dp", c.dp});
  m.axes.push_back({"tp", c.tp});
  return m;
}

ParallelCompileOptions pipelineCompileOptions(const ParallelConfig &c,
                                              const TrainOptions &t) {
  ParallelCompileOptions o;
  o.tp = c.tp;
  o.dp = c.dp;
  o.pp = c.pp;
  o.sp = c.sp;
  o.schedule = c.schedule;
  o.microbatches = t.gradAccum;
  o.layersPerStage = c.layersPerStage;
  o.recompute = c.recompute;
  o.memoryBudget = c.memoryBudget;
  o.optimizer = t.optimizer;
  // Fused before memory planning: the plan's buffers are the fused programs'.
  o.fusion = t.fusion;
  return o;
}

PipelineTrainer::PipelineTrainer(DeviceGroup &g) : group_(g) {}
PipelineTrainer::~PipelineTrainer() = default;

llvm::Expected<std::unique_ptr<PipelineTrainer>>
PipelineTrainer::create(const Graph &forward, const Graph &evalForward,
                        const TrainOptions &options,
                        const ParallelConfig &config, DeviceGroup &group) {
  Mesh want = pipelineMesh(config);
  if (!(group.mesh() == want)) {
    std::string w, h;
    llvm::raw_string_ostream ws(w), hs(h);
    printMesh(ws, want);
    printMesh(hs, group.mesh());
    return err("the pipelined configuration needs " + ws.str() +
               ", the device group has " + hs.str());
  }
  if (!group.allLocal())
    return err("pipelined training runs every rank in one process (run "
               "`strata train` without `strata launch`)");
  if (config.distributedOptimizer)
    return err("the distributed optimizer is not supported with pipelining "
               "yet (drop --distributed-optimizer, or --pp and --recompute)");
  for (size_t l = 0; l < group.numLocal(); ++l)
    if (!group.device(l).isHostMemory())
      return err("the pipeline trainer keeps its state in host memory; "
                 "device " +
                 group.device(l).name() + " is not supported yet");
  auto compiled =
      compilePipeline(forward, pipelineCompileOptions(config, options));
  if (!compiled)
    return compiled.takeError();
  return create(std::move(*compiled), forward, evalForward, options, config,
                group);
}

llvm::Expected<std::unique_ptr<PipelineTrainer>>
PipelineTrainer::create(CompiledPipeline compiled, const Graph &forward,
                        const Graph &evalForward, const TrainOptions &options,
                        const ParallelConfig &config, DeviceGroup &group) {
  if (!(group.mesh() == pipelineMesh(config)) || !group.allLocal())
    return err("the compiled programs need every rank of their mesh in this "
               "process");
  if (compiled.pipeline.schedule.microbatches != options.gradAccum)
    return err("the programs were compiled for " +
               llvm::Twine(compiled.pipeline.schedule.microbatches) +
               " microbatches per step, the run asks for " +
               llvm::Twine(options.gradAccum));
  std::unique_ptr<PipelineTrainer> t(new PipelineTrainer(group));
  t->opts_ = options;
  t->config_ = config;
  t->forward_ = forward;
  t->evalForward_ = evalForward;
  t->plan_ = std::make_unique<CompiledPipeline>(std::move(compiled));
  if (auto e = t->bind())
    return e;
  return t;
}

llvm::Error PipelineTrainer::bind() {
  const PipelinePlan &pp = plan_->pipeline;
  for (const MeshAxis &a : group_.mesh().axes)
    if (a.name != "pp")
      stageMesh_.axes.push_back(a);
  int64_t perStage = stageMesh_.numDevices();
  for (ValueId v : forward_.params())
    names_.push_back(forward_.value(v).name);
  for (const TiedParam &t : pp.tied)
    owner_[t.name] = t.ranks[0];

  ranks_.clear();
  for (size_t l = 0; l < group_.numLocal(); ++l) {
    auto r = std::make_unique<RankState>();
    int64_t rank = group_.globalRank(l);
    r->pipeRank = rank / perStage;
    r->stageRank = rank % perStage;
    for (int64_t c = 0; c < pp.schedule.spec.virtualStages; ++c)
      r->stages.push_back(pp.schedule.stageOf(r->pipeRank, c));
    r->device = &group_.device(l);
    if (auto e = createExecutors(*r))
      return e;
    for (int64_t s : r->stages) {
      const PipelineStage &st = pp.stages[s];
      // Held parameters: every parameter input of the rank's programs.
      for (const Graph *g : {&st.forward, &st.backward})
        for (ValueId in : g->inputs()) {
          const Value &val = g->value(in);
          if (!val.isParam())
            continue;
          paramSharding_[val.name] = shardingOf(*g, in);
          if (!r->p.count(val.name)) {
            r->p[val.name] = HostTensor(val.type);
            r->grads[val.name] = HostTensor(val.type);
          }
          if (!owner_.count(val.name))
            owner_[val.name] = r->pipeRank;
        }
      r->stash.emplace_back();
    }
    const Graph &opt = pp.optimizers[r->pipeRank];
    for (ValueId in : opt.inputs()) {
      llvm::StringRef name = opt.value(in).name;
      bool isM = name.consume_front("adam_m.");
      if (!isM && !name.consume_front("adam_v."))
        continue;
      (isM ? r->m : r->v)[name] = HostTensor(opt.type(in));
      momentSharding_[name] = shardingOf(opt, in);
    }
    ranks_.push_back(std::move(r));
  }
  std::vector<std::vector<Instr>> streams = pp.schedule.ranks;
  for (auto &s : streams)
    if (!s.empty() && s.back().kind == Instr::Optimizer)
      s.pop_back();
  completed_ = completedSends(pp.schedule, streams);
  for (const std::string &n : names_)
    if (!paramSharding_.count(n) || !momentSharding_.count(n))
      return err("parameter %" + n +
                 " is read by no stage program or updated by no optimizer "
                 "program of the pipeline plan");
  return llvm::Error::success();
}

llvm::Error PipelineTrainer::createExecutors(RankState &r) {
  const PipelinePlan &pp = plan_->pipeline;
  // The buffer plans of passes/memory (MemoryPlan.cpp), of the programs as
  // they run (fused or not): F's outputs go to stash slots, the optimizer's
  // to the state they replace.
  BufferPlanOptions outside;
  outside.outputsInArena = false;
  auto mk = [&](const Graph &g, const BufferPlanOptions &o,
                std::unique_ptr<PlanExecutor> &out) -> llvm::Error {
    auto x = PlanExecutor::create(g, planBuffers(g, o), *r.device);
    if (!x)
      return err("@" + g.name + ": " + llvm::toString(x.takeError()));
    out = std::move(*x);
    r.reserve(out->arenaBytes());
    return llvm::Error::success();
  };
  for (int64_t s : r.stages) {
    r.fwd.emplace_back();
    r.bwd.emplace_back();
    if (auto e = mk(pp.stages[s].forward, outside, r.fwd.back()))
      return e;
    if (auto e = mk(pp.stages[s].backward, {}, r.bwd.back()))
      return e;
  }
  return mk(pp.optimizers[r.pipeRank], outside, r.opt);
}

llvm::Error PipelineTrainer::bindEval() {
  if (eval_)
    return llvm::Error::success();
  // The same cut on the model without dropout; only F programs run.
  ParallelConfig c = config_;
  c.recompute = RecomputeMode::None;
  c.memoryBudget = -1;
  c.layersPerStage.clear();
  for (const PipelineStage &s : plan_->pipeline.stages)
    c.layersPerStage.push_back(s.numLayers);
  TrainOptions t = opts_;
  t.gradAccum = plan_->pipeline.schedule.microbatches;
  auto compiled =
      compilePipeline(evalForward_, pipelineCompileOptions(c, t));
  if (!compiled)
    return compiled.takeError();
  auto e = std::make_unique<CompiledPipeline>(std::move(*compiled));
  for (size_t l = 0; l < ranks_.size(); ++l) {
    RankState &r = *ranks_[l];
    r.evalFwd.clear();
    for (int64_t s : r.stages) {
      const Graph &g = e->pipeline.stages[s].forward;
      auto x = PlanExecutor::create(g, planBuffers(g), *r.device);
      if (!x)
        return x.takeError();
      r.reserve((*x)->arenaBytes());
      r.evalFwd.push_back(std::move(*x));
    }
  }
  eval_ = std::move(e);
  return llvm::Error::success();
}

llvm::Error PipelineTrainer::initParams() {
  for (const std::string &name : names_) {
    auto full = initParam(forward_, forward_.lookup(name), opts_.seed);
    if (!full)
      return full.takeError();
    for (auto &r : ranks_) {
      if (r->p.count(name)) {
        auto block =
            shardOf(*full, paramSharding_[name], stageMesh_, r->stageRank);
        if (!block)
          return block.takeError();
        r->p[name] = std::move(*block);
      }
      for (auto *state : {&r->m, &r->v})
        if (auto it = state->find(name); it != state->end())
          std::memset(it->second.raw(), 0, it->second.bytes());
    }
  }
  step_ = 0;
  return llvm::Error::success();
}

llvm::Error
PipelineTrainer::scatterBatches(llvm::ArrayRef<HostTensor> tokens,
                                llvm::ArrayRef<HostTensor> labels) {
  const Graph &micro = plan_->micro;
  Sharding ts = shardingOf(micro, micro.lookup("tokens")),
           ls = shardingOf(micro, micro.lookup("labels"));
  for (auto &r : ranks_) {
    r->tokens.clear();
    r->labels.clear();
    for (size_t k = 0; k < tokens.size(); ++k) {
      auto a = shardOf(tokens[k], ts, stageMesh_, r->stageRank);
      if (!a)
        return a.takeError();
      auto b = shardOf(labels[k], ls, stageMesh_, r->stageRank);
      if (!b)
        return b.takeError();
      r->tokens.push_back(std::move(*a));
      r->labels.push_back(std::move(*b));
    }
  }
  return llvm::Error::success();
}

llvm::Error PipelineTrainer::runInstr(RankState &r, size_t local,
                                      const Instr &in, uint64_t counterBase,
                                      StepStats *stats, bool eval) {
  const PipelinePlan &pp = plan_->pipeline;
  LaunchContext base;
  base.seed = opts_.seed;
  std::vector<const void *> ins;
  std::vector<void *> outs;

  if (in.kind == Instr::Optimizer) {
    const Graph &g = pp.optimizers[r.pipeRank];
    HostTensor lr = HostTensor::scalar(stats->lr),
               t = HostTensor::scalar(double(step_ + 1));
    for (ValueId v : g.inputs()) {
      llvm::StringRef name = g.value(v).name;
      llvm::StringMap<HostTensor> *state = &r.p;
      if (name == "lr" || name == "step") {
        ins.push_back(name == "lr" ? lr.raw() : t.raw());
        continue;
      }
      if (name.consume_front("grad."))
        state = &r.grads;
      else if (name.consume_front("adam_m."))
        state = &r.m;
      else if (name.consume_front("adam_v."))
        state = &r.v;
      auto it = state->find(name);
      if (it == state->end())
        return err("@" + g.name + ": no state for input %" + g.value(v).name);
      ins.push_back(it->second.raw());
    }
    // New parameters and moments are written over the old ones where that
    // is safe, else staged and copied.
    std::vector<void *> bound;
    std::vector<std::pair<HostTensor, HostTensor *>> staged;
    for (ValueId out : g.outputs()) {
      llvm::StringRef name = g.value(out).name;
      if (name == "grad_norm") {
        bound.push_back(r.normOut.raw());
        continue;
      }
      std::string oldName = name.drop_front(4).str(); // past "new."
      llvm::StringRef key = oldName;
      llvm::StringMap<HostTensor> *state = &r.p;
      if (key.consume_front("adam_m."))
        state = &r.m;
      else if (key.consume_front("adam_v."))
        state = &r.v;
      auto it = state->find(key);
      if (!name.startswith("new.") || it == state->end())
        return err("@" + g.name + " has an output %" + name +
                   " that updates no state of this rank");
      if (writesInPlace(g, out, g.lookup(oldName))) {
        bound.push_back(it->second.raw());
        continue;
      }
      staged.emplace_back(HostTensor(g.type(out)), &it->second);
      bound.push_back(staged.back().first.raw());
    }
    if (auto e = r.opt->run(ins, bound, r.workspace, outs,
                            group_.context(local, base)))
      return e;
    for (const Node &n : g.nodes())
      if (n.op == OpKind::Send)
        r.messagesHeld += g.type(n.operands[0]).bytes();
    r.gradNorm = *r.normOut.data<float>();
    for (auto &[from, to] : staged)
      std::memcpy(to->raw(), from.raw(), to->bytes());
    return llvm::Error::success();
  }

  const PipelineStage &st = pp.stages[r.stages[in.chunk]];
  bool forward = in.kind == Instr::Forward;
  const Graph &g =
      eval ? eval_->pipeline.stages[st.index].forward
           : (forward ? st.forward : st.backward);
  PlanExecutor &prog = eval ? *r.evalFwd[in.chunk]
                            : *(forward ? r.fwd : r.bwd)[in.chunk];
  std::vector<HostTensor> &stash = r.stash[in.chunk][in.microbatch];
  for (ValueId v : g.inputs()) {
    const Value &val = g.value(v);
    if (val.name == "tokens" || val.name == "labels") {
      ins.push_back((val.name == "tokens" ? r.tokens : r.labels)[in.microbatch]
                        .raw());
      continue;
    }
    if (auto it = r.p.find(val.name); it != r.p.end()) {
      ins.push_back(it->second.raw());
      continue;
    }
    auto s = llvm::find(st.stash, val.name);
    if (forward || s == st.stash.end())
      return err("@" + g.name + ": no data for input %" + val.name);
    ins.push_back(stash[s - st.stash.begin()].raw());
  }
  base.step = counterBase + uint64_t(in.microbatch);
  base.microbatch = uint64_t(in.microbatch);
  // F writes the loss and its stash slots (allocated now, freed after B).
  std::vector<void *> bound(g.outputs().size(), nullptr);
  size_t first = forward && st.head ? 1 : 0;
  if (first)
    bound[0] = r.lossOut.raw();
  if (forward && !eval) {
    for (size_t o = first; o < bound.size(); ++o) {
      stash.emplace_back(g.type(g.outputs()[o]));
      bound[o] = stash.back().raw();
      r.stashHeld += stash.back().bytes();
    }
  }
  if (auto e = prog.run(ins, bound, r.workspace, outs,
                        group_.context(local, base)))
    return e;
  for (const Node &n : g.nodes())
    if (n.op == OpKind::Send)
      r.messagesHeld += g.type(n.operands[0]).bytes();
  if (forward) {
    if (st.head)
      r.loss += double(*static_cast<const float *>(outs[0]));
    return llvm::Error::success();
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    llvm::StringRef name = g.value(g.outputs()[o]).name;
    auto it = name.consume_front("grad.") ? r.grads.find(name) : r.grads.end();
    if (it == r.grads.end())
      return err("@" + g.name + " output %" + g.value(g.outputs()[o]).name +
                 " is not the gradient of a held parameter");
    addInto(it->second, outs[o]);
  }
  for (const HostTensor &t : stash)
    r.stashHeld -= t.bytes();
  stash.clear();
  return llvm::Error::success();
}

llvm::Error
PipelineTrainer::runStreams(llvm::ArrayRef<std::vector<Instr>> streams,
                            uint64_t counterBase, StepStats *stats, bool eval,
                            const CompletedSends *completed) {
  int64_t M = plan_->pipeline.schedule.microbatches;
  for (auto &r : ranks_) {
    r->loss = 0;
    for (auto &s : r->stash)
      s.assign(M, {});
    r->stashHeld = 0;
    r->messagesHeld = 0;
  }
  return group_.forEachRank([&](size_t l) -> llvm::Error {
    RankState &r = *ranks_[l];
    auto c = group_.comms(l).group({"pp"});
    if (!c)
      return c.takeError();
    const std::vector<Instr> &stream = streams[r.pipeRank];
    for (size_t i = 0; i < stream.size(); ++i) {
      llvm::Error e = runInstr(r, l, stream[i], counterBase, stats, eval);
      // Free the sends the schedule says were received by now.
      for (int32_t done : completed ? (*completed)[r.pipeRank][i]
                                    : std::vector<int32_t>{})
        if (!e)
          e = waitForSends(r, **c, stream[done]);
      if (e)
        return err("pipeline rank " + llvm::Twine(r.pipeRank) + ", " +
                   stream[i].str() + ": " + llvm::toString(std::move(e)));
      r.held();
    }
    // Eager sends have reached their peers before the next run reuses a
    // message slot.
    if (auto e = (*c)->waitSends())
      return e;
    r.messagesHeld = 0;
    return llvm::Error::success();
  });
}

llvm::Error PipelineTrainer::waitForSends(RankState &r, Communicator &c,
                                          const Instr &in) {
  const PipelineStage &st = plan_->pipeline.stages[r.stages[in.chunk]];
  const Graph &g = in.kind == Instr::Forward ? st.forward : st.backward;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Send)
      continue;
    auto slot = messageSlot(n, uint64_t(in.microbatch));
    if (!slot)
      return slot.takeError();
    if (auto e = c.waitSend(n.attrs.getInt("peer"), *slot))
      return e;
    r.messagesHeld -= g.type(n.operands[0]).bytes();
  }
  return llvm::Error::success();
}

std::vector<std::vector<Instr>>
PipelineTrainer::singleMicrobatch(bool forwardOnly) const {
  const Schedule &s = plan_->pipeline.schedule;
  std::vector<std::vector<Instr>> streams(s.pp);
  for (auto &st : streams) {
    for (int32_t c = 0; c < s.spec.virtualStages; ++c)
      st.push_back({Instr::Forward, 0, c});
    if (!forwardOnly)
      for (int32_t c = int32_t(s.spec.virtualStages); c-- > 0;)
        st.push_back({Instr::Backward, 0, c});
  }
  return streams;
}

llvm::Expected<double> PipelineTrainer::headLoss(double divisor) {
  const PipelineStage &head = plan_->pipeline.stages.back();
  Sharding s = shardingOf(head.forward, head.forward.outputs()[0]);
  std::vector<HostTensor> blocks(stageMesh_.numDevices());
  for (auto &r : ranks_)
    if (r->pipeRank == head.rank)
      blocks[r->stageRank] = HostTensor::scalar(r->loss / divisor, DType::F64);
  auto value = gatherFull(blocks, s, stageMesh_);
  if (!value)
    return value.takeError();
  return value->get(0);
}

llvm::Expected<StepStats> PipelineTrainer::step(const BatchFn &batch) {
  const Schedule &s = plan_->pipeline.schedule;
  int64_t M = s.microbatches;
  ValueId tv = forward_.lookup("tokens");
  if (tv == kNoValue)
    return err("the model takes no %tokens");
  std::vector<HostTensor> tokens, labels;
  for (int64_t k = 0; k < M; ++k) {
    tokens.emplace_back(forward_.type(tv));
    labels.emplace_back(forward_.type(tv));
    batch(k, tokens.back().data<int32_t>(), labels.back().data<int32_t>());
  }
  if (auto e = scatterBatches(tokens, labels))
    return e;
  for (auto &r : ranks_)
    for (auto &g : r->grads)
      std::memset(g.second.raw(), 0, g.second.bytes());
  StepStats stats;
  stats.lr = opts_.schedule.at(step_);
  // The optimizer runs on the gradients averaged over the microbatches, as
  // the serial Trainer's accumulation does: run the streams without their
  // optimizer, scale, then the optimizer programs.
  std::vector<std::vector<Instr>> streams = s.ranks, opt(s.pp);
  for (int64_t r = 0; r < s.pp; ++r) {
    if (streams[r].empty() || streams[r].back().kind != Instr::Optimizer)
      return err("the schedule of pipeline rank " + llvm::Twine(r) +
                 " does not end with the optimizer");
    opt[r].push_back(streams[r].back());
    streams[r].pop_back();
  }
  for (auto &r : ranks_) {
    MeasuredMemory &m = r->memory;
    m = MeasuredMemory();
    for (auto *state : {&r->p, &r->grads, &r->m, &r->v})
      for (auto &t : *state)
        (state == &r->p ? m.parameters
         : state == &r->grads ? m.gradients
                              : m.optimizerState) += t.second.bytes();
    m.workspace = r->workspaceBytes;
    r->measuring = true;
  }
  auto run = [&]() -> llvm::Error {
    if (auto e = runStreams(streams, uint64_t(step_ * M), &stats, false,
                            &completed_))
      return e;
    auto loss = headLoss(double(M));
    if (!loss)
      return loss.takeError();
    stats.loss = *loss;
    if (M > 1) {
      float scale = 1.0f / float(M);
      for (auto &r : ranks_)
        for (auto &g : r->grads)
          for (int64_t j = 0, n = g.second.numElements(); j < n; ++j)
            g.second.data<float>()[j] *= scale;
    }
    return runStreams(opt, 0, &stats, false);
  };
  llvm::Error ran = run();
  for (auto &r : ranks_)
    r->measuring = false;
  if (ran)
    return ran;
  stats.gradNorm = ranks_.front()->gradNorm;
  ++step_;
  return stats;
}

std::vector<MeasuredMemory> PipelineTrainer::measuredMemory() const {
  std::vector<MeasuredMemory> out(plan_->pipeline.pp);
  for (auto &r : ranks_)
    if (r->stageRank == 0)
      out[r->pipeRank] = r->memory;
  return out;
}

llvm::Expected<double> PipelineTrainer::evalLoss(const int32_t *tokens,
                                                 const int32_t *labels) {
  if (auto e = bindEval())
    return e;
  ValueId tv = forward_.lookup("tokens");
  HostTensor tk(forward_.type(tv)), lb(forward_.type(tv));
  std::memcpy(tk.raw(), tokens, tk.bytes());
  std::memcpy(lb.raw(), labels, lb.bytes());
  if (auto e = scatterBatches({tk}, {lb}))
    return e;
  if (auto e = runStreams(singleMicrobatch(true), 0, nullptr, true))
    return e;
  return headLoss(1.0);
}

} // namespace strata
