//===- TrainingSession.cpp - Serial or parallel training behind one face ---===//
#include "runtime/parallel/TrainingSession.h"

#include "passes/spmd/Spmd.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/parallel/ParallelTrainer.h"
#include "runtime/parallel/PipelineTrainer.h"

namespace strata {

namespace {
class SerialSession : public TrainingSession {
public:
  llvm::Error init(const Graph &forward, const Graph &eval,
                   const TrainOptions &options) {
    auto t = Trainer::create(forward, eval, options, device_);
    if (!t)
      return t.takeError();
    trainer_ = std::move(*t);
    return llvm::Error::success();
  }
  llvm::Error initParams() override { return trainer_->initParams(); }
  llvm::Expected<StepStats> step(const BatchFn &batch) override {
    return trainer_->step(batch);
  }
  llvm::Expected<double> evalLoss(const int32_t *tokens,
                                  const int32_t *labels) override {
    return trainer_->evalLoss(tokens, labels);
  }
  int64_t step() const override { return trainer_->step(); }
  void setStep(int64_t s) override { trainer_->setStep(s); }
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
  state() override {
    std::vector<std::pair<std::string, HostTensor>> s;
    for (auto &[name, t] : trainer_->namedState())
      s.emplace_back(name, t->clone());
    return s;
  }
  llvm::Error loadState(
      llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) override {
    for (auto &[name, t] : trainer_->namedState()) {
      const HostTensor *saved = lookup(name);
      if (!saved || saved->type() != t->type())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "tensor '" + name + "' is missing or has the wrong shape");
      *t = saved->clone();
    }
    return llvm::Error::success();
  }
  bool isWriter() const override { return true; }
  std::string describe() const override { return "1 CPU device"; }

private:
  CpuDevice device_;
  std::unique_ptr<Trainer> trainer_;
};

/// A trainer over a DeviceGroup: the session calls forward to it.
template <class T> class GroupSession : public TrainingSession {
public:
  llvm::Error initParams() override { return trainer_->initParams(); }
  llvm::Expected<StepStats> step(const BatchFn &batch) override {
    return trainer_->step(batch);
  }
  llvm::Expected<double> evalLoss(const int32_t *tokens,
                                  const int32_t *labels) override {
    return trainer_->evalLoss(tokens, labels);
  }
  int64_t step() const override { return trainer_->step(); }
  void setStep(int64_t s) override { trainer_->setStep(s); }
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
  state() override {
    return trainer_->gatherState();
  }
  llvm::Error loadState(
      llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) override {
    return trainer_->scatterState(lookup);
  }

protected:
  std::unique_ptr<DeviceGroup> group_;
  std::unique_ptr<T> trainer_; // uses group_: declared after
};

class ParallelSession : public GroupSession<ParallelTrainer> {
public:
  llvm::Error init(const Graph &forward, const Graph &eval,
                   const TrainOptions &options, const ParallelConfig &c,
                   const std::optional<DistEnv> &env) {
    Mesh mesh;
    mesh.axes = {{"dp", c.dp}, {"tp", c.tp}};
    auto g = env ? DeviceGroup::multiProcess(mesh, *env)
                 : DeviceGroup::inProcess(mesh);
    if (!g)
      return g.takeError();
    group_ = std::move(*g);
    auto t = ParallelTrainer::create(forward, eval, options, c, *group_);
    if (!t)
      return t.takeError();
    trainer_ = std::move(*t);
    env_ = env;
    config_ = c;
    return llvm::Error::success();
  }
  bool isWriter() const override { return !env_ || env_->rank == 0; }
  llvm::Expected<bool> anyProcess(bool local) override {
    if (!env_)
      return local;
    HostTensor mine = HostTensor::scalar(local ? 1 : 0, DType::I32);
    auto all = group_->allGather(mine);
    if (!all)
      return all.takeError();
    return llvm::any_of(*all, [](const HostTensor &t) { return t.get(0); });
  }
  std::string describe() const override {
    std::string s =
        std::to_string(config_.numDevices()) +
        " CPU devices (tp=" + std::to_string(config_.tp) +
        " dp=" + std::to_string(config_.dp) + (config_.sp ? " sp" : "") +
        (config_.distributedOptimizer ? " distributed-optimizer" : "") + ")";
    if (env_)
      s += ", rank " + std::to_string(env_->rank) + " of " +
           std::to_string(env_->worldSize) + " processes";
    return s;
  }

private:
  std::optional<DistEnv> env_;
  ParallelConfig config_;
};
/// A pipelined run on pp*dp*tp in-process CPU devices.
class PipelineSession : public GroupSession<PipelineTrainer> {
public:
  llvm::Error init(const Graph &forward, const Graph &eval,
                   const TrainOptions &options, const ParallelConfig &c,
                   const CompiledPipeline *programs) {
    auto g = DeviceGroup::inProcess(pipelineMesh(c));
    if (!g)
      return g.takeError();
    group_ = std::move(*g);
    auto t = programs ? PipelineTrainer::create(*programs, forward, eval,
                                                options, c, *group_)
                      : PipelineTrainer::create(forward, eval, options, c,
                                                *group_);
    if (!t)
      return t.takeError();
    trainer_ = std::move(*t);
    config_ = c;
    fromPlan_ = programs != nullptr;
    return llvm::Error::success();
  }
  bool isWriter() const override { return true; }
  std::string describe() const override {
    const Schedule &s = trainer_->compiled().pipeline.schedule;
    return std::to_string(config_.numDevices()) +
           (config_.numDevices() == 1 ? " CPU device" : " CPU devices") +
           " (tp=" + std::to_string(config_.tp) +
           " dp=" + std::to_string(config_.dp) + (config_.sp ? " sp" : "") +
           " pp=" + std::to_string(config_.pp) + ", " + s.spec.str() +
           " over " + std::to_string(s.microbatches) +
           " microbatches, recompute " +
           recomputeModeName(config_.recompute).str() +
           (fromPlan_ ? "; the plan's compiled programs" : "") + ")";
  }

private:
  ParallelConfig config_;
  bool fromPlan_ = false;
};
} // namespace

llvm::Expected<std::unique_ptr<TrainingSession>>
createTrainingSession(const Graph &forward, const Graph &evalForward,
                      const TrainOptions &options,
                      const ParallelConfig &parallel,
                      const CompiledPipeline *programs) {
  auto env = DistEnv::fromEnvironment();
  if (!env)
    return env.takeError();
  if (parallel.tp > 1 || parallel.dp > 1) {
    // The partitioner's constraints, before devices exist.
    Graph seeded = forward;
    if (auto e = seedMegatron(seeded, {parallel.tp, parallel.dp, parallel.sp}))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "error: cannot train on tp=" + std::to_string(parallel.tp) +
              " dp=" + std::to_string(parallel.dp) + ": " +
              llvm::toString(std::move(e)));
  }
  if (parallel.pipelined() || programs) {
    if (*env)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "error: pipelined training runs every rank in one process (run "
          "`strata train` without `strata launch`)");
    auto s = std::make_unique<PipelineSession>();
    if (auto e = s->init(forward, evalForward, options, parallel, programs))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "error: cannot train on tp=" + std::to_string(parallel.tp) +
              " dp=" + std::to_string(parallel.dp) +
              " pp=" + std::to_string(parallel.pp) + ": " +
              llvm::toString(std::move(e)));
    return std::unique_ptr<TrainingSession>(std::move(s));
  }
  if (parallel.numDevices() == 1 && !*env) {
    auto s = std::make_unique<SerialSession>();
    if (auto e = s->init(forward, evalForward, options))
      return e;
    return std::unique_ptr<TrainingSession>(std::move(s));
  }
  auto s = std::make_unique<ParallelSession>();
  if (auto e = s->init(forward, evalForward, options, parallel, *env))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "error: cannot train on tp=" + std::to_string(parallel.tp) +
            " dp=" + std::to_string(parallel.dp) + ": " +
            llvm::toString(std::move(e)));
  return std::unique_ptr<TrainingSession>(std::move(s));
}

} // namespace strata
