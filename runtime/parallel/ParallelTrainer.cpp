//===- ParallelTrainer.cpp - Training on a mesh of devices -----------------===//
#include "runtime/parallel/ParallelTrainer.h"

#include "runtime/parallel/Sharded.h"
#include "runtime/train/ParamInit.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string layoutStr(const Graph &g, ValueId v) {
  std::string s = g.type(v).str() + " {";
  llvm::raw_string_ostream os(s);
  printSharding(os, shardingOf(g, v));
  return os.str() + "}";
}

/// Checks that value `name` of `a` and of `b` have one local type and layout
/// (state handed from one program to the other).
llvm::Error sameLayout(const Graph &a, llvm::StringRef nameA, const Graph &b,
                       llvm::StringRef nameB) {
  ValueId va = a.lookup(nameA), vb = b.lookup(nameB);
  if (va == kNoValue || vb == kNoValue)
    return err("program @" + (va == kNoValue ? a.name : b.name) + " has no %" +
               (va == kNoValue ? nameA : nameB));
  if (layoutStr(a, va) != layoutStr(b, vb))
    return err("%" + nameA + " of @" + a.name + " is " + layoutStr(a, va) +
               " but %" + nameB + " of @" + b.name + " is " + layoutStr(b, vb) +
               " (the state passed between the programs must keep its layout)");
  return llvm::Error::success();
}
} // namespace

llvm::Expected<std::unique_ptr<ParallelTrainer>>
ParallelTrainer::create(const Graph &forward, const Graph &evalForward,
                        const TrainOptions &options,
                        const ParallelConfig &config, DeviceGroup &group) {
  if (config.pipelined())
    return err("a pipelined configuration (pp > 1 or recomputation) runs on "
               "the pipeline trainer (runtime/parallel/PipelineTrainer.h)");
  Mesh want;
  want.axes = {{"dp", config.dp}, {"tp", config.tp}};
  if (!(group.mesh() == want)) {
    std::string w, h;
    llvm::raw_string_ostream ws(w), hs(h);
    printMesh(ws, want);
    printMesh(hs, group.mesh());
    return err("the parallel configuration needs " + ws.str() +
               ", the device group has " + hs.str());
  }
  for (size_t l = 0; l < group.numLocal(); ++l)
    if (!group.device(l).isHostMemory())
      return err(
          "the parallel trainer keeps its state in host memory; device " +
          group.device(l).name() + " is not supported yet");
  auto programs =
      buildParallelPrograms(forward, evalForward, options.optimizer, config);
  if (!programs)
    return programs.takeError();
  std::unique_ptr<ParallelTrainer> t(new ParallelTrainer(group));
  t->opts_ = options;
  t->forward_ = forward;
  t->programs_ = std::move(*programs);
  if (auto e = t->bind())
    return e;
  return t;
}

llvm::Error ParallelTrainer::bind() {
  const Graph &micro = programs_.micro, &opt = programs_.optimizer;
  for (ValueId v : forward_.params()) {
    const std::string &name = forward_.value(v).name;
    index_[name] = names_.size();
    names_.push_back(name);
    if (auto e = sameLayout(micro, name, opt, name))
      return e;
    if (auto e = sameLayout(opt, name, opt, "new." + name))
      return e;
    for (const char *m : {"adam_m.", "adam_v."})
      if (auto e = sameLayout(opt, m + name, opt, "new." + (m + name)))
        return e;
    ValueId g = micro.lookup("grad." + name);
    if (g == kNoValue || g == micro.lookup(name) ||
        micro.type(g) != micro.type(micro.lookup(name)))
      return err("the microbatch program has no gradient %grad." + name +
                 " of the parameter's local type");
  }
  ValueId tokens = forward_.lookup("tokens");
  if (tokens == kNoValue || forward_.type(tokens).rank() != 2)
    return err("the model takes no i32[B,S] %tokens");
  batch_ = forward_.type(tokens).shape[0];
  seq_ = forward_.type(tokens).shape[1];

  auto mk = [&](const Graph &g,
                std::unique_ptr<ParallelInterpreter> &out) -> llvm::Error {
    auto r = ParallelInterpreter::create(g, group_);
    if (!r)
      return r.takeError();
    out = std::move(*r);
    return llvm::Error::success();
  };
  if (auto e = mk(micro, micro_))
    return e;
  if (auto e = mk(opt, opt_))
    return e;
  if (auto e = mk(programs_.eval, eval_))
    return e;

  ranks_.resize(group_.numLocal());
  for (RankState &r : ranks_) {
    for (const std::string &name : names_) {
      r.p.emplace_back(micro.type(micro.lookup(name)));
      r.grads.emplace_back(micro.type(micro.lookup(name)));
      r.m.emplace_back(opt.type(opt.lookup("adam_m." + name)));
      r.v.emplace_back(opt.type(opt.lookup("adam_v." + name)));
    }
    r.tokens = HostTensor(micro.type(micro.lookup("tokens")));
    r.labels = HostTensor(micro.type(micro.lookup("labels")));
  }
  return llvm::Error::success();
}

llvm::Error ParallelTrainer::initParams() {
  const Graph &micro = programs_.micro;
  for (size_t i = 0; i < names_.size(); ++i) {
    auto full = initParam(forward_, forward_.lookup(names_[i]), opts_.seed);
    if (!full)
      return full.takeError();
    Sharding s = shardingOf(micro, micro.lookup(names_[i]));
    for (size_t l = 0; l < ranks_.size(); ++l) {
      auto block = shardOf(*full, s, group_.mesh(), group_.globalRank(l));
      if (!block)
        return block.takeError();
      ranks_[l].p[i] = std::move(*block);
      std::memset(ranks_[l].m[i].raw(), 0, ranks_[l].m[i].bytes());
      std::memset(ranks_[l].v[i].raw(), 0, ranks_[l].v[i].bytes());
    }
  }
  step_ = 0;
  return llvm::Error::success();
}

llvm::Error ParallelTrainer::scatterBatch(const int32_t *tokens,
                                          const int32_t *labels) {
  const Graph &micro = programs_.micro;
  TensorType t{DType::I32, {batch_, seq_}};
  HostTensor tk(t), lb(t);
  std::memcpy(tk.raw(), tokens, tk.bytes());
  std::memcpy(lb.raw(), labels, lb.bytes());
  for (size_t l = 0; l < ranks_.size(); ++l) {
    int64_t rank = group_.globalRank(l);
    auto a = shardOf(tk, shardingOf(micro, micro.lookup("tokens")),
                     group_.mesh(), rank);
    if (!a)
      return a.takeError();
    auto b = shardOf(lb, shardingOf(micro, micro.lookup("labels")),
                     group_.mesh(), rank);
    if (!b)
      return b.takeError();
    ranks_[l].tokens = std::move(*a);
    ranks_[l].labels = std::move(*b);
  }
  return llvm::Error::success();
}

llvm::Error ParallelTrainer::runNamed(
    ParallelInterpreter &interp,
    llvm::function_ref<const void *(const Value &, RankState &)> input,
    uint64_t dropoutStep,
    llvm::function_ref<llvm::Error(size_t, llvm::ArrayRef<void *>)> after) {
  const Graph &g = interp.graph();
  std::vector<std::vector<const void *>> ins(ranks_.size());
  for (size_t l = 0; l < ranks_.size(); ++l)
    for (ValueId v : g.inputs()) {
      const void *p = input(g.value(v), ranks_[l]);
      if (!p)
        return err("no data for input %" + g.value(v).name);
      ins[l].push_back(p);
    }
  LaunchContext base;
  base.seed = opts_.seed;
  base.step = dropoutStep;
  std::vector<std::vector<void *>> outs;
  if (auto e = interp.run(ins, outs, base))
    return e;
  for (size_t l = 0; l < ranks_.size(); ++l)
    if (auto e = after(l, outs[l]))
      return e;
  return llvm::Error::success();
}

llvm::Expected<double>
ParallelTrainer::reduceScalar(const Graph &g, ValueId out,
                              llvm::ArrayRef<double> perLocal) {
  std::vector<HostTensor> local;
  for (double x : perLocal)
    local.push_back(HostTensor::scalar(x, DType::F64));
  auto all = group_.allGather(local);
  if (!all)
    return all.takeError();
  auto full = gatherFull(*all, shardingOf(g, out), group_.mesh());
  if (!full)
    return full.takeError();
  return full->get(0);
}

llvm::Expected<StepStats> ParallelTrainer::step(const BatchFn &batch) {
  const Graph &micro = programs_.micro;
  StepStats stats;
  stats.lr = opts_.schedule.at(step_);
  for (RankState &r : ranks_) {
    r.loss = 0;
    for (HostTensor &g : r.grads)
      std::memset(g.raw(), 0, g.bytes());
  }
  HostTensor tk(TensorType{DType::I32, {batch_, seq_}}), lb = tk.clone();
  auto modelInput = [&](const Value &v, RankState &r) {
    return modelInputOf(v, r);
  };
  // Microbatch m of step s draws dropout counter s * gradAccum + m, as the
  // serial Trainer does.
  for (int64_t m = 0; m < opts_.gradAccum; ++m) {
    batch(m, tk.data<int32_t>(), lb.data<int32_t>());
    if (auto e = scatterBatch(tk.data<int32_t>(), lb.data<int32_t>()))
      return e;
    auto accumulate = [&](size_t l,
                          llvm::ArrayRef<void *> outs) -> llvm::Error {
      RankState &r = ranks_[l];
      r.loss += double(*static_cast<const float *>(outs[0]));
      for (size_t o = 1; o < outs.size(); ++o) {
        llvm::StringRef name = micro.value(micro.outputs()[o]).name;
        if (!name.consume_front("grad.") || !index_.count(name))
          return err("microbatch program output %" + name +
                     " is not a gradient");
        HostTensor &acc = r.grads[index_[name]];
        const float *g = static_cast<const float *>(outs[o]);
        float *a = acc.data<float>();
        for (int64_t j = 0, n = acc.numElements(); j < n; ++j)
          a[j] += g[j];
      }
      return llvm::Error::success();
    };
    if (auto e = runNamed(*micro_, modelInput,
                          uint64_t(step_ * opts_.gradAccum + m), accumulate))
      return e;
  }
  std::vector<double> losses;
  for (RankState &r : ranks_) {
    losses.push_back(r.loss / double(opts_.gradAccum));
    if (opts_.gradAccum > 1) {
      float s = 1.0f / float(opts_.gradAccum);
      for (HostTensor &g : r.grads)
        for (int64_t j = 0, n = g.numElements(); j < n; ++j)
          g.data<float>()[j] *= s;
    }
  }
  auto loss = reduceScalar(micro, micro.outputs()[0], losses);
  if (!loss)
    return loss.takeError();
  stats.loss = *loss;

  const Graph &opt = programs_.optimizer;
  HostTensor lr = HostTensor::scalar(stats.lr),
             t = HostTensor::scalar(double(step_ + 1));
  auto optInput = [&](const Value &v, RankState &r) -> const void * {
    llvm::StringRef name = v.name;
    if (name == "lr")
      return lr.raw();
    if (name == "step")
      return t.raw();
    std::vector<HostTensor> *state = &r.p;
    if (name.consume_front("grad."))
      state = &r.grads;
    else if (name.consume_front("adam_m."))
      state = &r.m;
    else if (name.consume_front("adam_v."))
      state = &r.v;
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : (*state)[it->second].raw();
  };
  auto update = [&](size_t l, llvm::ArrayRef<void *> outs) -> llvm::Error {
    RankState &r = ranks_[l];
    for (size_t o = 0; o < outs.size(); ++o) {
      llvm::StringRef name = opt.value(opt.outputs()[o]).name;
      if (name == "grad_norm") {
        stats.gradNorm = *static_cast<const float *>(outs[o]);
        continue;
      }
      if (!name.consume_front("new."))
        return err("optimizer program has an unexpected output %" + name);
      std::vector<HostTensor> *state = &r.p;
      if (name.consume_front("adam_m."))
        state = &r.m;
      else if (name.consume_front("adam_v."))
        state = &r.v;
      auto it = index_.find(name);
      if (it == index_.end())
        return err("optimizer output names unknown parameter " + name);
      HostTensor &dst = (*state)[it->second];
      std::memcpy(dst.raw(), outs[o], dst.bytes());
    }
    return llvm::Error::success();
  };
  if (auto e = runNamed(*opt_, optInput, 0, update))
    return e;
  ++step_;
  return stats;
}

const void *ParallelTrainer::modelInputOf(const Value &v,
                                          RankState &r) const {
  if (v.name == "tokens")
    return r.tokens.raw();
  if (v.name == "labels")
    return r.labels.raw();
  auto it = index_.find(v.name);
  return it == index_.end() ? nullptr : r.p[it->second].raw();
}

llvm::Expected<double> ParallelTrainer::evalLoss(const int32_t *tokens,
                                                 const int32_t *labels) {
  if (auto e = scatterBatch(tokens, labels))
    return e;
  const Graph &eval = programs_.eval;
  auto input = [&](const Value &v, RankState &r) {
    return modelInputOf(v, r);
  };
  std::vector<double> losses(ranks_.size());
  if (auto e = runNamed(*eval_, input, 0,
                        [&](size_t l, llvm::ArrayRef<void *> outs) {
                          losses[l] = *static_cast<const float *>(outs[0]);
                          return llvm::Error::success();
                        }))
    return e;
  return reduceScalar(eval, eval.outputs()[0], losses);
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
ParallelTrainer::lossAndGrads(const int32_t *tokens, const int32_t *labels) {
  if (auto e = scatterBatch(tokens, labels))
    return e;
  const Graph &micro = programs_.micro;
  auto input = [&](const Value &v, RankState &r) {
    return modelInputOf(v, r);
  };
  // outs[o][l]: output o of local rank l.
  std::vector<std::vector<HostTensor>> outs(micro.outputs().size());
  if (auto e = runNamed(*micro_, input, uint64_t(step_),
                        [&](size_t l, llvm::ArrayRef<void *> o) {
                          for (size_t k = 0; k < o.size(); ++k) {
                            HostTensor t(micro.type(micro.outputs()[k]));
                            std::memcpy(t.raw(), o[k], t.bytes());
                            outs[k].push_back(std::move(t));
                          }
                          return llvm::Error::success();
                        }))
    return e;
  std::vector<std::pair<std::string, HostTensor>> result;
  for (size_t k = 0; k < outs.size(); ++k) {
    ValueId v = micro.outputs()[k];
    auto all = group_.allGather(outs[k]);
    if (!all)
      return all.takeError();
    auto full = gatherFull(*all, shardingOf(micro, v), group_.mesh());
    if (!full)
      return full.takeError();
    result.emplace_back(micro.value(v).name, std::move(*full));
  }
  return result;
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
ParallelTrainer::gatherState() {
  const Graph &micro = programs_.micro, &opt = programs_.optimizer;
  std::vector<std::pair<std::string, HostTensor>> state;
  auto gather = [&](const Graph &g, const std::string &name,
                    std::vector<HostTensor> RankState::*field,
                    size_t i) -> llvm::Error {
    std::vector<HostTensor> local;
    for (RankState &r : ranks_)
      local.push_back((r.*field)[i]);
    auto all = group_.allGather(local);
    if (!all)
      return all.takeError();
    auto full = gatherFull(*all, shardingOf(g, g.lookup(name)), group_.mesh());
    if (!full)
      return full.takeError();
    state.emplace_back(name, std::move(*full));
    return llvm::Error::success();
  };
  for (size_t i = 0; i < names_.size(); ++i)
    if (auto e = gather(micro, names_[i], &RankState::p, i))
      return e;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (auto e = gather(opt, "adam_m." + names_[i], &RankState::m, i))
      return e;
    if (auto e = gather(opt, "adam_v." + names_[i], &RankState::v, i))
      return e;
  }
  return state;
}

llvm::Error ParallelTrainer::scatterState(
    llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) {
  const Graph &micro = programs_.micro, &opt = programs_.optimizer;
  auto scatter = [&](const Graph &g, const std::string &name,
                     std::vector<HostTensor> RankState::*field,
                     size_t i) -> llvm::Error {
    const HostTensor *full = lookup(name);
    ValueId v = forward_.lookup(name);
    TensorType want = v != kNoValue ? forward_.type(v)
                                    : forward_.type(forward_.lookup(names_[i]));
    if (!full || full->type() != want)
      return err("tensor '" + name + "' is missing or is not " + want.str());
    for (size_t l = 0; l < ranks_.size(); ++l) {
      auto block = shardOf(*full, shardingOf(g, g.lookup(name)), group_.mesh(),
                           group_.globalRank(l));
      if (!block)
        return block.takeError();
      (ranks_[l].*field)[i] = std::move(*block);
    }
    return llvm::Error::success();
  };
  for (size_t i = 0; i < names_.size(); ++i) {
    if (auto e = scatter(micro, names_[i], &RankState::p, i))
      return e;
    if (auto e = scatter(opt, "adam_m." + names_[i], &RankState::m, i))
      return e;
    if (auto e = scatter(opt, "adam_v." + names_[i], &RankState::v, i))
      return e;
  }
  return llvm::Error::success();
}

} // namespace strata
