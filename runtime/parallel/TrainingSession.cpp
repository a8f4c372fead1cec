//===- TrainingSession.cpp - A training job's devices and trainer ---------===//
#include "runtime/parallel/TrainingSession.h"

#include "passes/spmd/Spmd.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string layout(const ParallelConfig &c) {
  std::string s = "tp=" + std::to_string(c.tp) + " dp=" + std::to_string(c.dp);
  if (c.pp > 1)
    s += " pp=" + std::to_string(c.pp);
  return s;
}
} // namespace

llvm::Expected<std::unique_ptr<TrainingSession>> TrainingSession::create(
    const Graph &forward, const Graph &evalForward, const TrainOptions &options,
    const ParallelConfig &parallel, const CompiledPipeline *programs,
    const DeviceGroupOptions &devices) {
  auto env = DistEnv::fromEnvironment();
  if (!env)
    return env.takeError();
  auto fail = [&](llvm::Error e) {
    return err("cannot train on " + layout(parallel) + ": " +
               llvm::toString(std::move(e)));
  };
  if (parallel.tp > 1 || parallel.dp > 1) {
    // The partitioner's constraints, before devices exist.
    Graph seeded = forward;
    if (auto e = seedMegatron(seeded, {parallel.tp, parallel.dp, parallel.sp}))
      return fail(std::move(e));
  }
  std::unique_ptr<TrainingSession> s(new TrainingSession());
  s->env_ = *env;
  s->config_ = parallel;
  s->fromPlan_ = programs != nullptr;
  Mesh mesh = trainingMesh(parallel);
  s->backend_ = devices.backend;
  auto group = *env ? DeviceGroup::multiProcess(mesh, **env, devices)
                    : DeviceGroup::inProcess(mesh, devices);
  if (!group)
    return fail(group.takeError());
  s->group_ = std::move(*group);
  auto t = programs ? Trainer::create(*programs, forward, evalForward, options,
                                      parallel, *s->group_)
                    : Trainer::create(forward, evalForward, options, parallel,
                                      *s->group_);
  if (!t)
    return fail(t.takeError());
  s->trainer_ = std::move(*t);
  return s;
}

llvm::Expected<bool> TrainingSession::anyProcess(bool local) {
  if (!env_)
    return local;
  HostTensor mine = HostTensor::scalar(local ? 1 : 0, DType::I32);
  auto all = group_->allGather(mine);
  if (!all)
    return all.takeError();
  return llvm::any_of(*all, [](const HostTensor &t) { return t.get(0); });
}

std::string TrainingSession::describe() const {
  const ParallelConfig &c = config_;
  int64_t n = c.numDevices();
  std::string kind =
      backend_ == Backend::Cpu ? "CPU" : backendName(backend_).str();
  std::string s =
      std::to_string(n) + " " + kind + (n == 1 ? " device" : " devices");
  std::string detail;
  if (n > 1 || c.pipelined()) {
    detail = "tp=" + std::to_string(c.tp) + " dp=" + std::to_string(c.dp) +
             (c.sp ? " sp" : "") +
             (c.distributedOptimizer ? " distributed-optimizer" : "");
    if (c.pipelined()) {
      const Schedule &sc = trainer_->compiled().pipeline.schedule;
      detail += " pp=" + std::to_string(c.pp) + ", " + sc.spec.str() +
                " over " + std::to_string(sc.microbatches) +
                " microbatches, recompute " +
                recomputeModeName(c.recompute).str();
    }
  }
  if (fromPlan_)
    detail += (detail.empty() ? "" : "; ") +
              std::string("the plan's compiled programs");
  if (!detail.empty())
    s += " (" + detail + ")";
  if (env_)
    s += ", rank " + std::to_string(env_->rank) + " of " +
         std::to_string(env_->worldSize) + " processes";
  return s;
}

} // namespace strata
