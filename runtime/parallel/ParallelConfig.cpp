//===- ParallelConfig.cpp - The layout of a training job ------------------===//
#include "runtime/parallel/ParallelConfig.h"

#include "proto/strata.pb.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

} // namespace

llvm::Expected<ParallelConfig> planLayout(const pb::Plan &plan) {
  const pb::ParallelConfig &pc = plan.parallel();
  ParallelConfig c;
  c.tp = std::max<int64_t>(pc.tp(), 1);
  c.dp = std::max<int64_t>(pc.dp(), 1);
  c.pp = std::max<int64_t>(pc.pp(), 1);
  c.sp = pc.sp();
  c.distributedOptimizer = pc.distributed_optimizer();
  if (!pc.schedule().empty()) {
    auto s = parseScheduleSpec(pc.schedule());
    if (!s)
      return s.takeError();
    c.schedule = *s;
  }
  if (!pc.recompute().empty()) {
    auto r = parseRecomputeMode(pc.recompute());
    if (!r)
      return err("the plan's recompute mode '" + pc.recompute() +
                 "' is none of none, selective, full, auto");
    c.recompute = *r;
  }
  if (c.recompute == RecomputeMode::Auto)
    c.memoryBudget = pc.memory_budget();
  if (c.pipelined())
    for (const pb::PipelineStage &s : plan.pipeline().stages())
      c.layersPerStage.push_back(s.num_layers());
  return c;
}

} // namespace strata
