//===- Trainer.cpp - One model's training state and step -------------------===//
#include "runtime/train/Trainer.h"

#include "passes/autodiff/Autodiff.h"
#include "passes/fusion/Fusion.h"
#include "runtime/train/ParamInit.h"

#include <cstring>

namespace strata {

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<std::unique_ptr<Trainer>>
Trainer::create(Graph forward, Graph evalForward, const TrainOptions &options,
                Device &device) {
  if (!device.isHostMemory())
    return err("the trainer keeps its state in host memory; device " +
               device.name() + " is not supported yet");
  std::unique_ptr<Trainer> t(new Trainer(device));
  t->opts_ = options;
  t->micro_ = forward;
  if (auto e = differentiate(t->micro_)) return e;
  t->opt_ = buildOptimizerGraph(t->micro_, options.optimizer);
  t->fwd_ = std::move(forward);
  t->eval_ = std::move(evalForward);
  if (options.fusion)
    for (Graph *g : {&t->micro_, &t->opt_, &t->eval_}) fuseGraph(*g);
  if (auto e = t->bind()) return e;
  return t;
}

llvm::Error Trainer::bind() {
  for (ValueId v : micro_.inputs()) {
    const Value &val = micro_.value(v);
    if (val.isParam()) {
      paramIndex_[val.name] = params_.size();
      params_.push_back(v);
      p_.emplace_back(val.type);
      m_.emplace_back(val.type);
      v_.emplace_back(val.type);
      grads_.emplace_back(val.type);
    } else if (val.name == "tokens" || val.name == "labels") {
      if (val.type.dtype != DType::I32 || val.type.rank() != 2)
        return err("%" + val.name + " must be i32[B,S], got " + val.type.str());
      batch_ = val.type.shape[0];
      seq_ = val.type.shape[1];
    } else {
      return err("unexpected graph input %" + val.name +
                 " (expected params, tokens and labels)");
    }
  }
  tokens_ = HostTensor(TensorType{DType::I32, {batch_, seq_}});
  labels_ = HostTensor(TensorType{DType::I32, {batch_, seq_}});
  auto mk = [&](const Graph &g, std::unique_ptr<Interpreter> &out) -> llvm::Error {
    auto r = Interpreter::create(g, dev_);
    if (!r) return r.takeError();
    out = std::move(*r);
    return llvm::Error::success();
  };
  if (auto e = mk(micro_, microRun_)) return e;
  if (auto e = mk(opt_, optRun_)) return e;
  return mk(eval_, evalRun_);
}

llvm::Error Trainer::initParams() {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto t = initParam(micro_, params_[i], opts_.seed);
    if (!t) return t.takeError();
    p_[i] = std::move(*t);
    std::memset(m_[i].raw(), 0, m_[i].bytes());
    std::memset(v_[i].raw(), 0, v_[i].bytes());
  }
  step_ = 0;
  return llvm::Error::success();
}

const void *Trainer::modelInput(const Value &v, const int32_t *tokens,
                                const int32_t *labels) const {
  if (v.name == "tokens") return tokens;
  if (v.name == "labels") return labels;
  auto it = paramIndex_.find(v.name);
  return it == paramIndex_.end() ? nullptr : p_[it->second].raw();
}

llvm::Error Trainer::runNamed(
    Interpreter &interp, const std::function<const void *(const Value &)> &input,
    std::vector<void *> &outputs, uint64_t dropoutStep) {
  const Graph &g = interp.graph();
  std::vector<const void *> ins;
  for (ValueId v : g.inputs()) {
    const void *p = input(g.value(v));
    if (!p) return err("no data for input %" + g.value(v).name);
    ins.push_back(p);
  }
  LaunchContext ctx;
  ctx.seed = opts_.seed;
  ctx.step = dropoutStep;
  return interp.run(ins, outputs, ctx);
}

llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
Trainer::lossAndGrads(const int32_t *tokens, const int32_t *labels) {
  std::vector<void *> outs;
  auto input = [&](const Value &v) { return modelInput(v, tokens, labels); };
  if (auto e = runNamed(*microRun_, input, outs, step_)) return e;
  std::vector<std::pair<std::string, HostTensor>> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Value &v = micro_.value(micro_.outputs()[i]);
    HostTensor t(v.type);
    std::memcpy(t.raw(), outs[i], t.bytes());
    result.emplace_back(v.name, std::move(t));
  }
  return result;
}

llvm::Expected<StepStats> Trainer::step(const BatchFn &batch) {
  StepStats stats;
  stats.lr = opts_.schedule.at(step_);
  // One microbatch: the optimizer reads the gradients where the microbatch
  // program left them (valid until its next run); more are summed in grads_.
  const bool accumulate = opts_.gradAccum > 1;
  std::vector<const void *> gradPtr(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) gradPtr[i] = grads_[i].raw();
  if (accumulate)
    for (HostTensor &g : grads_) std::memset(g.raw(), 0, g.bytes());
  // Microbatch m of step s draws dropout counter s * gradAccum + m, so every
  // microbatch of every step has its own mask.
  for (int64_t micro = 0; micro < opts_.gradAccum; ++micro) {
    batch(micro, tokens_.data<int32_t>(), labels_.data<int32_t>());
    std::vector<void *> outs;
    auto input = [&](const Value &v) {
      return modelInput(v, tokens_.data<int32_t>(), labels_.data<int32_t>());
    };
    if (auto e = runNamed(*microRun_, input, outs,
                          uint64_t(step_ * opts_.gradAccum + micro)))
      return e;
    stats.loss += double(*static_cast<const float *>(outs[0]));
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!accumulate) {
        gradPtr[i] = outs[i + 1];
        continue;
      }
      float *acc = grads_[i].data<float>();
      const float *g = static_cast<const float *>(outs[i + 1]);
      for (int64_t j = 0, n = grads_[i].numElements(); j < n; ++j) acc[j] += g[j];
    }
  }
  stats.loss /= double(opts_.gradAccum);
  if (opts_.gradAccum > 1) {
    float s = 1.0f / float(opts_.gradAccum);
    for (HostTensor &g : grads_)
      for (int64_t j = 0, n = g.numElements(); j < n; ++j) g.data<float>()[j] *= s;
  }

  HostTensor lr = HostTensor::scalar(stats.lr), t = HostTensor::scalar(double(step_ + 1));
  auto input = [&](const Value &v) -> const void * {
    llvm::StringRef name = v.name;
    if (name == "lr") return lr.raw();
    if (name == "step") return t.raw();
    std::vector<HostTensor> *state = &p_;
    if (name.consume_front("grad.")) {
      auto it = paramIndex_.find(name);
      return it == paramIndex_.end() ? nullptr : gradPtr[it->second];
    }
    if (name.consume_front("adam_m.")) state = &m_;
    else if (name.consume_front("adam_v.")) state = &v_;
    auto it = paramIndex_.find(name);
    return it == paramIndex_.end() ? nullptr : (*state)[it->second].raw();
  };
  std::vector<void *> outs;
  if (auto e = runNamed(*optRun_, input, outs, 0)) return e;
  for (size_t i = 0; i < outs.size(); ++i) {
    llvm::StringRef name = opt_.value(opt_.outputs()[i]).name;
    if (name == "grad_norm") {
      stats.gradNorm = *static_cast<const float *>(outs[i]);
      continue;
    }
    if (!name.consume_front("new."))
      return err("optimizer program has an unexpected output %" + name);
    std::vector<HostTensor> *state = &p_;
    if (name.consume_front("adam_m.")) state = &m_;
    else if (name.consume_front("adam_v.")) state = &v_;
    auto it = paramIndex_.find(name);
    if (it == paramIndex_.end())
      return err("optimizer output names unknown parameter " + name);
    HostTensor &dst = (*state)[it->second];
    std::memcpy(dst.raw(), outs[i], dst.bytes());
  }
  ++step_;
  return stats;
}

llvm::Expected<double> Trainer::evalLoss(const int32_t *tokens,
                                         const int32_t *labels) {
  std::vector<void *> outs;
  auto input = [&](const Value &v) { return modelInput(v, tokens, labels); };
  if (auto e = runNamed(*evalRun_, input, outs, 0)) return e;
  return double(*static_cast<const float *>(outs[0]));
}

std::vector<std::pair<std::string, HostTensor *>> Trainer::namedParams() {
  std::vector<std::pair<std::string, HostTensor *>> r;
  for (size_t i = 0; i < params_.size(); ++i)
    r.emplace_back(micro_.value(params_[i]).name, &p_[i]);
  return r;
}

std::vector<std::pair<std::string, HostTensor *>> Trainer::namedState() {
  auto r = namedParams();
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string &n = micro_.value(params_[i]).name;
    r.emplace_back("adam_m." + n, &m_[i]);
    r.emplace_back("adam_v." + n, &v_[i]);
  }
  return r;
}

} // namespace strata
