//===- ParallelPlan.cpp - The partitioned programs of a training job -------===//
#include "runtime/parallel/ParallelPlan.h"

#include "ir/Verifier.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/spmd/CombineAllReduce.h"
#include "passes/spmd/Partitioner.h"
#include "passes/spmd/Spmd.h"
#include "proto/strata.pb.h"

#include "llvm/ADT/StringMap.h"

#include <optional>

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

Sharding shardingOrWhole(const Value &v) {
  return v.sharding ? *v.sharding : Sharding::replicated(v.type.rank());
}

/// How the distributed optimizer lays out a parameter's state: split over
/// dp along the first dim that tp leaves whole and dp divides; nullopt if
/// none (1-d tp-split biases keep their state whole over dp).
std::optional<Sharding> zeroSharding(const Value &p, int64_t dp) {
  Sharding s = shardingOrWhole(p);
  for (int64_t d = 0; d < p.type.rank(); ++d)
    if (s.dims[d].empty() && p.type.shape[d] % dp == 0) {
      s.dims[d] = {"dp"};
      return s;
    }
  return std::nullopt;
}

/// Marks the gradients partial over dp and, for the distributed optimizer,
/// lays the moments, the gradients' squares and the clipped gradients out
/// split over dp (zeroSharding).
void seedOptimizer(Graph &opt, const ParallelConfig &c) {
  if (c.dp == 1)
    return;
  llvm::StringMap<Sharding> zero; // by parameter name
  for (ValueId v : opt.inputs()) {
    Value &in = opt.value(v);
    if (in.isParam() && c.distributedOptimizer) {
      if (auto s = zeroSharding(in, c.dp))
        zero[in.name] = *s;
      continue;
    }
    llvm::StringRef name = in.name;
    if (name.consume_front("grad.")) {
      Sharding s = shardingOrWhole(in);
      s.partial = {"dp"};
      in.sharding = s;
    } else if (name.consume_front("adam_m.") || name.consume_front("adam_v.")) {
      if (auto it = zero.find(name); it != zero.end())
        in.sharding = it->second;
    }
  }
  if (zero.empty())
    return;
  for (const Node &n : opt.nodes()) {
    if (n.operands.empty())
      continue;
    const Value &x = opt.value(n.operands[0]);
    if (n.op == OpKind::Square && x.isInput()) {
      llvm::StringRef name = x.name;
      if (name.consume_front("grad."))
        if (auto it = zero.find(name); it != zero.end())
          opt.value(n.results[0]).sharding = it->second;
    }
    if (n.op == OpKind::AdamWUpdate) {
      auto it = zero.find(x.name); // operand 0 is the parameter
      ValueId g = n.operands[1];
      if (it != zero.end() && !opt.value(g).isInput())
        opt.value(g).sharding = it->second;
    }
  }
}

/// After the distributed optimizer's partitioning, every `new.<p>` is p's
/// dp shard: append the all_gather that makes it p's layout again.
llvm::Error gatherUpdatedParams(Graph &opt) {
  llvm::SmallVector<ValueId, 32> outs(opt.outputs().begin(),
                                      opt.outputs().end());
  for (ValueId &o : outs) {
    llvm::StringRef name = opt.value(o).name;
    if (!name.consume_front("new.") || name.startswith("adam_"))
      continue;
    ValueId p = opt.lookup(name);
    if (p == kNoValue)
      return err("optimizer output %new." + name + " has no parameter");
    Sharding want = shardingOrWhole(opt.value(p));
    Sharding have = shardingOrWhole(opt.value(o));
    if (have == want)
      continue;
    int64_t dim = -1;
    bool ok = have.partial == want.partial;
    for (size_t d = 0; ok && d < want.dims.size(); ++d) {
      if (have.dims[d] == want.dims[d])
        continue;
      auto split = want.dims[d];
      split.push_back("dp");
      ok = dim < 0 && have.dims[d] == split;
      dim = int64_t(d);
    }
    if (!ok || dim < 0)
      return err("optimizer output %new." + name +
                 " is neither the parameter's layout nor its dp shard");
    TensorType full = opt.type(o);
    full.shape[dim] *= opt.mesh->axisSize("dp");
    std::string newName = opt.value(o).name;
    opt.rename(o, opt.freshName(newName + ".shard"));
    Attrs attrs{{"axes", StrList{"dp"}},
                {"dim", dim},
                {"reason", "distributed optimizer: every dp rank updated one "
                           "shard of %" +
                               name.str() + "; gather the parameter"},
                {"src", "optimizer." + name.str()}};
    int32_t n = opt.addNode(OpKind::AllGather, {o}, {full}, attrs,
                            "optimizer." + name.str(), {newName});
    ValueId gathered = opt.node(n).results[0];
    if (!want.isReplicated())
      opt.value(gathered).sharding = want;
    o = gathered;
  }
  opt.setOutputs(outs);
  return llvm::Error::success();
}
} // namespace

llvm::Expected<ParallelConfig> planLayout(const pb::Plan &plan) {
  const pb::ParallelConfig &pc = plan.parallel();
  ParallelConfig c;
  c.tp = std::max<int64_t>(pc.tp(), 1);
  c.dp = std::max<int64_t>(pc.dp(), 1);
  c.pp = std::max<int64_t>(pc.pp(), 1);
  c.sp = pc.sp();
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
  seedOptimizer(opt, c);
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
