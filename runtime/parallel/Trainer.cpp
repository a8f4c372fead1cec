//===- Trainer.cpp - The one trainer: any layout, serial included
//----------===//
#include "runtime/parallel/Trainer.h"

#include "ir/Op.h"
#include "passes/recompute/Recompute.h"
#include "runtime/comm/CollectiveKernels.h"
#include "runtime/parallel/SendCompletion.h"
#include "runtime/parallel/Sharded.h"
#include "runtime/parallel/TrainerRankState.h"
#include "runtime/train/ParamInit.h"

#include <cmath>
#include <cstring>
#include <set>

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
  if (d < 0 ||
      (g.node(d).op != OpKind::AdamWUpdate && g.node(d).op != OpKind::Recv))
    return false;
  for (size_t i = d; in != kNoValue && i < g.nodes().size(); ++i)
    if (llvm::is_contained(g.node(i).operands, in) &&
        !(int32_t(i) == d && g.node(d).op == OpKind::AdamWUpdate))
      return false;
  return true;
}
} // namespace

Mesh trainingMesh(const ParallelConfig &c) {
  Mesh m;
  if (c.pp > 1)
    m.axes.push_back({"pp", c.pp});
  m.axes.push_back({"dp", c.dp});
  m.axes.push_back({"tp", c.tp});
  return m;
}

ParallelCompileOptions trainingCompileOptions(const ParallelConfig &c,
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
  o.distributedOptimizer = c.distributedOptimizer;
  // Fused before memory planning: the plan's buffers are the fused programs'.
  o.fusion = t.fusion;
  o.precision = t.precision;
  o.lossScaling = t.lossScaling.has_value();
  return o;
}

Trainer::Trainer(DeviceGroup &g) : group_(g) {}
Trainer::~Trainer() = default;

namespace {
llvm::Error checkGroup(const ParallelConfig &config, DeviceGroup &group) {
  Mesh want = trainingMesh(config);
  if (group.mesh() == want)
    return llvm::Error::success();
  std::string w, h;
  llvm::raw_string_ostream ws(w), hs(h);
  printMesh(ws, want);
  printMesh(hs, group.mesh());
  return err("the configuration needs " + ws.str() + ", the device group has " +
             hs.str());
}

/// Each local device with a memory of its own has room for its pipeline
/// rank's planned peak and the device's own workspace for the programs the
/// rank runs in a step (each microbatch's once), checked before anything is
/// allocated.
llvm::Error checkDeviceMemory(const CompiledPipeline &c, DeviceGroup &group) {
  int64_t perStage =
      group.mesh().numDevices() / std::max<int64_t>(c.pipeline.pp, 1);
  for (size_t l = 0; l < group.numLocal(); ++l) {
    std::optional<int64_t> free = group.device(l).freeBytes();
    int64_t pipeRank = group.globalRank(l) / perStage;
    if (!free || pipeRank >= int64_t(c.memory.ranks.size()))
      continue;
    std::vector<const Graph *> programs;
    for (const PipelineStage &st : c.pipeline.stages)
      if (st.rank == pipeRank)
        for (int64_t m = 0; m < c.pipeline.schedule.microbatches; ++m)
          programs.push_back(&st.forward), programs.push_back(&st.backward);
    if (pipeRank < int64_t(c.pipeline.optimizers.size()))
      programs.push_back(&c.pipeline.optimizers[pipeRank]);
    int64_t peak = c.memory.ranks[pipeRank].peak,
            own = group.device(l).workspaceBytes(programs);
    if (peak + own > *free)
      return err(group.device(l).name() + " has " + formatBytes(*free) +
                 " free, and the plan needs " + formatBytes(peak) +
                 " at its peak (" + c.memory.ranks[pipeRank].peakAt +
                 " of pipeline rank " + llvm::Twine(pipeRank) + ") and " +
                 formatBytes(own) +
                 " of the device's own workspace (GEMM workspace, kernel "
                 "scratch, 16-bit nodes' f32 copies, NCCL staging): use a "
                 "smaller micro batch, --recompute, more --tp or --pp, or "
                 "--distributed-optimizer");
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<std::unique_ptr<Trainer>>
Trainer::create(const Graph &forward, const Graph &evalForward,
                const TrainOptions &options, const ParallelConfig &config,
                DeviceGroup &group) {
  if (auto e = checkGroup(config, group))
    return e;
  auto compiled =
      compilePipeline(forward, trainingCompileOptions(config, options));
  if (!compiled)
    return compiled.takeError();
  return create(std::move(*compiled), forward, evalForward, options, config,
                group);
}

llvm::Expected<std::unique_ptr<Trainer>>
Trainer::create(CompiledPipeline compiled, const Graph &forward,
                const Graph &evalForward, const TrainOptions &options,
                const ParallelConfig &config, DeviceGroup &group) {
  if (auto e = checkGroup(config, group))
    return e;
  if (compiled.pipeline.schedule.microbatches != options.gradAccum)
    return err("the programs were compiled for " +
               llvm::Twine(compiled.pipeline.schedule.microbatches) +
               " microbatches per step, the run asks for " +
               llvm::Twine(options.gradAccum));
  if (auto e = checkDeviceMemory(compiled, group))
    return e;
  std::unique_ptr<Trainer> t(new Trainer(group));
  t->opts_ = options;
  t->config_ = config;
  t->forward_ = forward;
  t->evalForward_ = evalForward;
  t->plan_ = std::make_unique<CompiledPipeline>(std::move(compiled));
  if (auto e = t->bind())
    return e;
  return t;
}

llvm::Error Trainer::bind() {
  const PipelinePlan &pp = plan_->pipeline;
  for (const MeshAxis &a : group_.mesh().axes)
    if (a.name != "pp")
      stageMesh_.axes.push_back(a);
  int64_t perStage = stageMesh_.numDevices();
  int64_t M = pp.schedule.microbatches;
  for (ValueId v : forward_.params())
    names_.push_back(forward_.value(v).name);
  if (pp.optimizerBindings.size() != pp.optimizers.size())
    return err("the plan has no binding table for every optimizer program");
  // Who holds and who updates each parameter, from the whole plan's
  // binding tables (ranks of other processes included).
  for (const PipelineStage &st : pp.stages)
    for (const ProgramBindings *b : {&st.forwardBindings, &st.backwardBindings})
      for (const Binding &x : b->inputs) {
        if (x.role != Role::Parameter)
          continue;
        paramSharding_[x.name] = x.sharding;
        owner_[x.name] = x.owner;
        auto &h = holders_[x.name];
        if (!llvm::is_contained(h, st.rank)) {
          h.push_back(st.rank);
          llvm::sort(h);
        }
      }
  for (const ProgramBindings &b : pp.optimizerBindings)
    for (const Binding &x : b.inputs)
      if (x.role == Role::AdamM)
        momentSharding_[x.name] = x.sharding;
  for (const std::string &n : names_)
    if (!paramSharding_.count(n) || !momentSharding_.count(n))
      return err("parameter %" + n +
                 " is read by no stage program or updated by no optimizer "
                 "program of the plan");

  ranks_.clear();
  for (size_t l = 0; l < group_.numLocal(); ++l) {
    auto r = std::make_unique<RankState>();
    int64_t rank = group_.globalRank(l);
    r->pipeRank = rank / perStage;
    r->stageRank = rank % perStage;
    for (int64_t c = 0; c < pp.schedule.spec.virtualStages; ++c)
      r->stages.push_back(pp.schedule.stageOf(r->pipeRank, c));
    Device &dev = group_.device(l);
    r->device = &dev;
    if (auto e = createExecutables(*r))
      return e;
    for (int64_t s : r->stages) {
      const PipelineStage &st = pp.stages[s];
      for (auto [g, b] : {std::pair{&st.forward, &st.forwardBindings},
                          std::pair{&st.backward, &st.backwardBindings}})
        for (size_t i = 0; i < b->inputs.size(); ++i)
          if (b->inputs[i].role == Role::Parameter &&
              !r->p.count(b->inputs[i].name)) {
            const TensorType &t = g->type(g->inputs()[i]);
            r->p[b->inputs[i].name] = DeviceBuffer(dev, t);
            r->grads[b->inputs[i].name] = DeviceBuffer(dev, t);
          }
      r->stash.emplace_back();
      r->stashPool.emplace_back();
    }
    if (auto e = bindLossScale(*r))
      return e;
    const Graph &opt = pp.optimizers[r->pipeRank];
    const ProgramBindings &ob = pp.optimizerBindings[r->pipeRank];
    for (size_t i = 0; i < ob.inputs.size(); ++i) {
      const Binding &x = ob.inputs[i];
      const TensorType &t = opt.type(opt.inputs()[i]);
      if (x.role == Role::AdamM || x.role == Role::AdamV)
        (*r->state(x.role))[x.name] = DeviceBuffer(dev, t);
      else if (x.role == Role::LearningRate) {
        r->lr = DeviceBuffer(dev, t);
        r->lrHost = HostTensor(t);
      } else if (x.role == Role::Step) {
        r->stepCount = DeviceBuffer(dev, t);
        r->stepHost = HostTensor(t);
      }
    }
    for (size_t o = 0; o < ob.outputs.size(); ++o)
      if (ob.outputs[o].role == Role::GradNorm)
        r->norm = DeviceBuffer(dev, opt.type(opt.outputs()[o]));
    r->staging.resize(ob.outputs.size());
    // Which new values may be written over the state they replace (the
    // input of the same name and role, if any).
    for (size_t o = 0; o < ob.outputs.size(); ++o) {
      const Binding &x = ob.outputs[o];
      Role old = x.role == Role::NewParameter ? Role::Parameter
                 : x.role == Role::NewAdamM   ? Role::AdamM
                                              : Role::AdamV;
      ValueId in = kNoValue;
      for (size_t i = 0; i < ob.inputs.size(); ++i)
        if (ob.inputs[i] == Binding{old, x.name})
          in = opt.inputs()[i];
      r->optInPlace.push_back(x.role != Role::GradNorm &&
                              writesInPlace(opt, opt.outputs()[o], in));
    }
    r->losses = DeviceBuffer(dev, TensorType{DType::F32, {M}});
    if (auto e = bindGradReducer(*r))
      return e;
    ranks_.push_back(std::move(r));
  }
  std::vector<std::vector<Instr>> streams = pp.schedule.ranks;
  for (auto &s : streams)
    if (!s.empty() && s.back().kind == Instr::Optimizer)
      s.pop_back();
  completed_ = completedSends(pp.schedule, streams);
  return connectGroups();
}

llvm::Error Trainer::connectGroups() {
  // Every group a rank's programs use, connected now (a collective
  // operation of its members: NCCL cannot create communicators lazily).
  // The members of a group over dp and tp share their programs, so they
  // connect in the same order.
  return group_.forEachRank([&](size_t l) -> llvm::Error {
    RankState &r = *ranks_[l];
    std::vector<const Graph *> programs = {
        &plan_->pipeline.optimizers[r.pipeRank]};
    for (int64_t s : r.stages)
      for (const Graph *g : {&plan_->pipeline.stages[s].forward,
                             &plan_->pipeline.stages[s].backward})
        programs.push_back(g);
    std::set<std::vector<std::string>> done;
    if (r.reducer->reducesOverDp()) {
      done.insert({"dp"});
      if (auto c = group_.comms(l).group({"dp"}); !c)
        return c.takeError();
    }
    for (const Graph *g : programs)
      for (const Node &n : g->nodes()) {
        if (!isCollective(n.op) || !n.attrs.has("axes"))
          continue;
        StrList axes = n.attrs.getStrings("axes");
        if (!done.insert({axes.begin(), axes.end()}).second)
          continue;
        if (auto c = group_.comms(l).group(axes); !c)
          return c.takeError();
      }
    return llvm::Error::success();
  });
}

llvm::Error Trainer::createExecutables(RankState &r) {
  const PipelinePlan &pp = plan_->pipeline;
  const MemoryPlan &mp = plan_->memory;
  // The buffer plans passes/memory made for the programs as they run (fused
  // or not): F's outputs go to stash slots, the optimizer's to the state
  // they replace.
  if (mp.forward.size() != pp.stages.size() ||
      mp.backward.size() != pp.stages.size() ||
      mp.optimizer.size() != pp.optimizers.size())
    return err("the plan has no buffer plan for every program");
  auto mk = [&](const Graph &g, const BufferPlan &plan,
                std::unique_ptr<Executable> &out) -> llvm::Error {
    auto x = Executable::create(g, plan, *r.device);
    if (!x)
      return err("@" + g.name + ": " + llvm::toString(x.takeError()));
    out = std::move(*x);
    r.reserve(out->arenaBytes());
    return llvm::Error::success();
  };
  for (int64_t s : r.stages) {
    r.fwd.emplace_back();
    r.bwd.emplace_back();
    if (auto e = mk(pp.stages[s].forward, mp.forward[s], r.fwd.back()))
      return e;
    if (auto e = mk(pp.stages[s].backward, mp.backward[s], r.bwd.back()))
      return e;
  }
  return mk(pp.optimizers[r.pipeRank], mp.optimizer[r.pipeRank], r.opt);
}

llvm::Error Trainer::bindEval() {
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
  auto compiled = compilePipeline(evalForward_, trainingCompileOptions(c, t));
  if (!compiled)
    return compiled.takeError();
  auto e = std::make_unique<CompiledPipeline>(std::move(*compiled));
  for (size_t l = 0; l < ranks_.size(); ++l) {
    RankState &r = *ranks_[l];
    r.evalFwd.clear();
    // Outputs in the arena: eval's stash values are not kept.
    for (int64_t s : r.stages) {
      const Graph &g = e->pipeline.stages[s].forward;
      auto x = Executable::create(g, planBuffers(g), *r.device);
      if (!x)
        return x.takeError();
      r.reserve((*x)->arenaBytes());
      r.evalFwd.push_back(std::move(*x));
    }
  }
  eval_ = std::move(e);
  return llvm::Error::success();
}

llvm::Error Trainer::initParams() {
  discardParamGathers();
  for (const std::string &name : names_) {
    const Value &param = forward_.value(forward_.lookup(name));
    auto element = paramInitializer(param, opts_.seed);
    if (!element)
      return element.takeError();
    for (auto &r : ranks_) {
      if (auto it = r->p.find(name); it != r->p.end()) {
        auto block = blockOf(param.type, paramSharding_[name], stageMesh_,
                             r->stageRank, *element);
        if (!block)
          return block.takeError();
        it->second.fromHost(*block);
        if (auto e = r->device->synchronize())
          return e;
      }
      for (auto *state : {&r->m, &r->v})
        if (auto it = state->find(name); it != state->end())
          r->device->fill(it->second.data(), it->second.bytes(), 0);
    }
  }
  for (auto &r : ranks_)
    if (auto e = r->device->synchronize())
      return e;
  step_ = 0;
  return llvm::Error::success();
}

void Trainer::zeroGradients() {
  for (auto &r : ranks_)
    for (auto &g : r->grads)
      r->device->fill(g.second.data(), g.second.bytes(), 0);
}

llvm::Error Trainer::scatterBatches(llvm::ArrayRef<HostTensor> tokens,
                                    llvm::ArrayRef<HostTensor> labels) {
  const Graph &micro = plan_->micro;
  Sharding ts = shardingOf(micro, micro.lookup("tokens")),
           ls = shardingOf(micro, micro.lookup("labels"));
  for (auto &r : ranks_) {
    std::vector<HostTensor> blocks;
    for (auto [all, sharding, bufs] : {std::tuple{tokens, &ts, &r->tokens},
                                       std::tuple{labels, &ls, &r->labels}}) {
      bufs->resize(all.size());
      for (size_t k = 0; k < all.size(); ++k) {
        auto b = shardOf(all[k], *sharding, stageMesh_, r->stageRank);
        if (!b)
          return b.takeError();
        DeviceBuffer &buf = (*bufs)[k];
        if (!buf.data() || buf.type() != b->type())
          buf = DeviceBuffer(*r->device, b->type());
        buf.fromHost(*b);
        blocks.push_back(std::move(*b));
      }
    }
    // The copies read `blocks`.
    if (auto e = r->device->synchronize())
      return e;
  }
  return llvm::Error::success();
}

void Trainer::setTrace(Trace *trace) {
  trace_ = trace;
  for (size_t l = 0; l < group_.numLocal(); ++l)
    group_.device(l).setTrace(trace, group_.globalRank(l));
}

llvm::Error Trainer::runOptimizer(RankState &r, size_t local, double lr) {
  TraceScope scope(trace_, group_.globalRank(local), "device stream 0",
                   "optimizer", "program");
  const Graph &g = plan_->pipeline.optimizers[r.pipeRank];
  const ProgramBindings &b = plan_->pipeline.optimizerBindings[r.pipeRank];
  r.lrHost.set(0, lr);
  r.stepHost.set(0, double(updates_ + 1));
  r.lr.fromHost(r.lrHost);
  r.stepCount.fromHost(r.stepHost);
  std::vector<const void *> ins;
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    const Binding &x = b.inputs[i];
    if (x.role == Role::LearningRate || x.role == Role::Step) {
      ins.push_back((x.role == Role::LearningRate ? r.lr : r.stepCount).data());
      continue;
    }
    if (x.role == Role::Gradient && r.reducer->optimizerInput(x.name)) {
      ins.push_back(r.reducer->optimizerInput(x.name));
      continue;
    }
    auto *state = r.state(x.role);
    auto it =
        state ? state->find(x.name) : llvm::StringMap<DeviceBuffer>::iterator();
    if (!state || it == state->end())
      return err("@" + g.name + ": no " + roleName(x.role) + " of %" + x.name +
                 " on this rank");
    ins.push_back(it->second.data());
  }
  // New parameters and moments are written over the old ones where that
  // is safe, else into a staging buffer (kept across steps) and copied.
  std::vector<void *> bound;
  std::vector<std::pair<DeviceBuffer *, DeviceBuffer *>> staged;
  for (size_t o = 0; o < b.outputs.size(); ++o) {
    const Binding &x = b.outputs[o];
    ValueId out = g.outputs()[o];
    if (x.role == Role::GradNorm) {
      bound.push_back(r.norm.data());
      continue;
    }
    if (x.role == Role::NewParameter && r.gatherer->shardOutput(x.name)) {
      // ZeRO-1: this rank's shard, gathered into the parameter later.
      bound.push_back(r.gatherer->shardOutput(x.name));
      continue;
    }
    auto *state = r.state(x.role);
    auto it =
        state ? state->find(x.name) : llvm::StringMap<DeviceBuffer>::iterator();
    if (!state || it == state->end())
      return err("@" + g.name + " output %" + g.value(out).name +
                 " updates no state of this rank");
    if (r.optInPlace[o]) {
      bound.push_back(it->second.data());
      continue;
    }
    DeviceBuffer &stage = r.staging[o];
    if (!stage.data())
      stage = DeviceBuffer(*r.device, g.type(out));
    staged.emplace_back(&stage, &it->second);
    bound.push_back(stage.data());
  }
  // Enqueued: runStreams waits for the rank's stream at the step's end.
  std::vector<void *> outs;
  if (auto e = r.opt->enqueue(ins, bound, r.workspace, outs,
                              group_.context(local, {})))
    return e;
  for (const Node &n : g.nodes())
    if (n.op == OpKind::Send)
      r.messagesHeld += g.type(n.operands[0]).bytes();
  for (auto &[from, to] : staged)
    r.device->copy(to->data(), from->data(), to->bytes());
  r.gatherer->afterOptimizer(group_.context(local, {}));
  return llvm::Error::success();
}

std::vector<std::vector<Instr>>
Trainer::singleMicrobatch(bool forwardOnly) const {
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

llvm::Expected<double> Trainer::headLoss(int64_t microbatches) {
  const PipelineStage &head = plan_->pipeline.stages.back();
  const Sharding &s = head.forwardBindings.outputs[0].sharding;
  // The head ranks' losses of the step, read back once, summed in
  // microbatch order.
  std::vector<HostTensor> mine;
  for (auto &r : ranks_) {
    double sum = 0;
    if (r->headLosses) {
      auto losses = readBack(r->losses);
      if (!losses)
        return losses.takeError();
      for (int64_t k = 0; k < microbatches; ++k)
        sum += losses->get(k);
    }
    mine.push_back(HostTensor::scalar(sum / double(microbatches), DType::F64));
  }
  auto all = group_.allGather(mine);
  if (!all)
    return all.takeError();
  int64_t perStage = stageMesh_.numDevices();
  std::vector<HostTensor> blocks(all->begin() + head.rank * perStage,
                                 all->begin() + (head.rank + 1) * perStage);
  auto value = gatherFull(blocks, s, stageMesh_);
  if (!value)
    return value.takeError();
  return value->get(0);
}

llvm::Expected<StepStats> Trainer::step(const BatchFn &batch) {
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
  zeroGradients();
  StepStats stats;
  stats.lr = opts_.schedule.at(updates_);
  if (scaler_) {
    stats.lossScale = scaler_->scale();
    writeLossScale(scaler_->scale());
  }
  // The optimizer runs on the gradients averaged over the microbatches:
  // run the streams without their optimizer, scale, then the optimizer
  // programs.
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
        (state == &r->p       ? m.parameters
         : state == &r->grads ? m.gradients
                              : m.optimizerState) += t.second.bytes();
    m.parameters += r->gatherer->shardBytes(); // ZeRO-1's updated shards
    m.workspace = r->workspaceBytes;
    r->measuring = true;
  }
  for (size_t l = 0; l < ranks_.size(); ++l)
    ranks_[l]->reducer->beginStep(scaler_ ? 1 : M, group_.context(l, {}));
  auto run = [&]() -> llvm::Error {
    if (auto e = runStreams(streams, uint64_t(step_ * M), &stats, false,
                            &completed_))
      return e;
    // The dp reduction of what the backward did not issue (GradReducer.h).
    if (auto e = group_.forEachRank([&](size_t l) {
          ranks_[l]->reducer->finish();
          return llvm::Error::success();
        }))
      return e;
    auto loss = headLoss(M);
    if (!loss)
      return loss.takeError();
    stats.loss = *loss;
    if (scaler_) {
      // Unscaled; a step with inf / nan anywhere is skipped.
      auto inf = unscaleGradients(scaler_->scale(), M, /*inject=*/true);
      if (!inf)
        return inf.takeError();
      stats.skipped = *inf;
      return stats.skipped ? llvm::Error::success()
                           : runStreams(opt, 0, &stats, false);
    }
    for (auto &r : ranks_)
      if (auto e = r->device->synchronize())
        return e;
    return runStreams(opt, 0, &stats, false);
  };
  llvm::Error ran = run();
  for (auto &r : ranks_)
    r->measuring = false;
  if (ran)
    return ran;
  if (scaler_)
    scaler_->update(stats.skipped);
  if (stats.skipped) {
    stats.gradNorm = std::nan("");
    ++step_;
    return stats;
  }
  auto norm = readBack(ranks_.front()->norm);
  if (!norm)
    return norm.takeError();
  stats.gradNorm = norm->get(0);
  ++step_;
  ++updates_;
  return stats;
}

std::vector<MeasuredMemory> Trainer::measuredMemory() const {
  std::vector<MeasuredMemory> out(plan_->pipeline.pp);
  for (auto &r : ranks_)
    if (r->stageRank == 0)
      out[r->pipeRank] = r->memory;
  return out;
}

llvm::Expected<HostTensor> readBack(const DeviceBuffer &b) {
  HostTensor t(b.type());
  b.toHost(t);
  if (auto e = b.device().synchronize())
    return e;
  return t;
}

llvm::Expected<double> Trainer::evalLoss(const int32_t *tokens,
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
  return headLoss(1);
}

} // namespace strata
