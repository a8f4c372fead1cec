//===- ParallelPlan.cpp - The partitioned programs of a training job -------===//
#include "runtime/parallel/ParallelPlan.h"

#include "ir/Verifier.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/spmd/CombineAllReduce.h"
#include "passes/spmd/DistributedOptimizer.h"
#include "passes/spmd/Partitioner.h"
#include "passes/spmd/Spmd.h"
#include "proto/strata.pb.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Expected<Graph> partition(const Graph &seeded,
                                llvm::ArrayRef<std::string> keepPartial) {
  spmd::PartitionOptions o;
  o.keepPartial.assign(keepPartial.begin(), keepPartial.end());
  auto g = spmd::Partitioner(seeded, o).run();
  if (!g)
    return g.takeError();
  if (auto e = verifyGraph(*g))
    return err("the partitioned graph @" + seeded.name +
               " is invalid: " + llvm::toString(std::move(e)));
  return g;
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

llvm::Expected<ParallelPrograms>
buildParallelPrograms(const Graph &forward, const Graph &evalForward,
                      const OptimizerConfig &optimizer,
                      const ParallelConfig &c) {
  if (c.sp && c.tp == 1)
    return err("sequence parallelism (--sp) splits the sequence over tp, "
               "but tp is 1 (use --tp 2 or more, or drop --sp)");
  MegatronSeedOptions seeds;
  seeds.tp = c.tp;
  seeds.dp = c.dp;
  seeds.sp = c.sp;

  Graph micro = forward;
  if (auto e = differentiate(micro))
    return e;
  if (auto e = seedMegatron(micro, seeds))
    return e;
  Graph opt = buildOptimizerGraph(micro, optimizer);
  seedDataParallelOptimizer(opt, c.dp, c.distributedOptimizer);
  Graph eval = evalForward;
  if (auto e = seedMegatron(eval, seeds))
    return e;

  ParallelPrograms p;
  auto m = partition(micro, {"dp"});
  if (!m)
    return m.takeError();
  p.micro = std::move(*m);
  auto o = partition(opt, {});
  if (!o)
    return o.takeError();
  p.optimizer = std::move(*o);
  if (c.distributedOptimizer && c.dp > 1) {
    if (auto e = gatherUpdatedParams(p.optimizer))
      return e;
    if (auto e = verifyGraph(p.optimizer))
      return e;
  }
  // One call for the per-parameter gradient and norm reductions.
  combineAllReduces(p.optimizer);
  auto ev = partition(eval, {"dp"});
  if (!ev)
    return ev.takeError();
  p.eval = std::move(*ev);
  return p;
}

} // namespace strata
