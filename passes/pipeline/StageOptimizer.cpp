//===- StageOptimizer.cpp - The optimizer program of a pipeline rank
//-------===//
//
// The AdamW graph of the parameters a rank owns, built on their logical
// (global) types and partitioned by spmd like the microbatch graph, so the
// norm's tp reductions come out of propagation. Then the pipeline's
// additions: tied-parameter messages and the all_reduce of the sum of
// squares over pp (PipelinePlan.h).
//
// The data-parallel gradient reduction is not in the program: the runtime
// reduces each gradient buffer in place over dp before the program runs
// (runtime/parallel/GradReducer.h), in buckets that overlap the backward.
// Each gradient input says how, as an attribute the plan keeps:
// `dp_reduce="all_reduce"` (the input is the dp sum), or with ZeRO-1
// `dp_reduce="reduce_scatter", dp_dim=D` (the input is this dp rank's shard
// along D of the sum, which the reduce-scatter writes, packed, at offset
// shard-index x shard-bytes of the gradient buffer, as Megatron's
// distributed optimizer keeps its shard in its gradient buffer). So the
// optimizer's workspace holds no copy of the gradients.
//
// With ZeRO-1 the all-gathers of the updated parameters are not in the
// program either (except a tied parameter's the program sends): its output
// `%new.<p>` is this rank's dp shard (its sharding says along which dim),
// which the runtime all-gathers into the parameter in buckets overlapping
// the next forward (runtime/parallel/ParamGatherer.h).
//
//===----------------------------------------------------------------------===//
#include "passes/pipeline/GraphCopy.h"
#include "passes/pipeline/Pipeline.h"
#include "passes/spmd/CombineAllReduce.h"
#include "passes/spmd/DistributedOptimizer.h"
#include "passes/spmd/Partitioner.h"

#include "llvm/ADT/StringMap.h"

namespace strata::pipeline {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "pipeline: " + msg);
}

/// The logical type of a (possibly partitioned) value of `g`.
TensorType globalType(const Graph &g, ValueId v) {
  TensorType t = g.type(v);
  const Value &val = g.value(v);
  if (!g.partitioned || !val.sharding || !g.mesh)
    return t;
  for (size_t d = 0; d < val.sharding->dims.size(); ++d)
    t.shape[d] *= spmd::groupSize(*g.mesh, val.sharding->dims[d]);
  return t;
}

/// Marks a gradient input reduced over dp in place by the runtime (see the
/// file comment): its sharding loses the pending dp sum or, with ZeRO-1,
/// becomes its moments' dp split.
void markReducedInPlace(Value &grad, const std::optional<Sharding> &zero) {
  Sharding s = grad.sharding ? *grad.sharding
                             : Sharding::replicated(grad.type.rank());
  llvm::erase_value(s.partial, "dp");
  grad.attrs.set("dp_reduce", std::string("all_reduce"));
  if (zero)
    for (size_t d = 0; d < zero->dims.size(); ++d)
      if (llvm::is_contained(zero->dims[d], "dp")) {
        s = *zero;
        grad.attrs.set("dp_reduce", std::string("reduce_scatter"));
        grad.attrs.set("dp_dim", int64_t(d));
      }
  grad.sharding = s;
}

/// After seedDataParallelOptimizer: every gradient input is reduced before
/// the program runs (with ZeRO-1, to the split of its moments).
void reduceGradientsInPlace(Graph &opt) {
  llvm::StringMap<Sharding> moments;
  for (ValueId v : opt.inputs()) {
    llvm::StringRef name = opt.value(v).name;
    if (name.consume_front("adam_m.") && opt.value(v).sharding)
      moments[name] = *opt.value(v).sharding;
  }
  for (ValueId v : opt.inputs()) {
    Value &in = opt.value(v);
    llvm::StringRef name = in.name;
    if (!name.consume_front("grad."))
      continue;
    auto it = moments.find(name);
    markReducedInPlace(in, it == moments.end()
                               ? std::nullopt
                               : std::optional<Sharding>(it->second));
  }
}

/// The AdamW graph of `owned`, partitioned when `micro` is: gradients
/// partial over dp, and with `distributed` the ZeRO-1 layout
/// (passes/spmd/DistributedOptimizer.h), whose updated shards are outputs
/// except those of `sent` (gathered in the program: it sends them).
llvm::Expected<Graph> adamw(const Graph &micro, llvm::ArrayRef<ValueId> owned,
                            const OptimizerConfig &config, bool distributed,
                            llvm::ArrayRef<ValueId> sent = {}) {
  Graph params;
  params.name = micro.name;
  params.mesh = micro.mesh;
  for (ValueId p : owned) {
    const Value &v = micro.value(p);
    ValueId q = params.addInput(v.name, globalType(micro, p), v.attrs);
    params.value(q).sharding = v.sharding;
  }
  Graph opt = buildOptimizerGraph(params, config);
  if (!micro.partitioned)
    return opt;
  int64_t dp = opt.mesh ? opt.mesh->axisSize("dp") : 1;
  seedDataParallelOptimizer(opt, dp, distributed);
  if (dp > 1)
    reduceGradientsInPlace(opt);
  spmd::PartitionOptions po;
  po.keepPartial.clear();
  auto part = spmd::Partitioner(opt, po).run();
  if (!part)
    return part.takeError();
  auto gatheredHere = [&](llvm::StringRef name) {
    return llvm::any_of(sent,
                        [&](ValueId p) { return micro.value(p).name == name; });
  };
  if (distributed && dp > 1)
    if (auto e = gatherUpdatedParams(*part, gatheredHere))
      return e;
  return part;
}
} // namespace

Attrs sendAttrs(int64_t peer, int64_t tag, llvm::StringRef src,
                const llvm::Twine &reason) {
  return {{"axes", StrList{"pp"}},
          {"peer", peer},
          {"reason", reason.str()},
          {"src", src.str()},
          {"tag", tag}};
}

Attrs recvAttrs(int64_t peer, int64_t tag, const TensorType &type,
                llvm::StringRef src, const llvm::Twine &reason) {
  return {{"axes", StrList{"pp"}},
          {"dtype", dtypeName(type.dtype).str()},
          {"peer", peer},
          {"reason", reason.str()},
          {"shape", IntList(type.shape.begin(), type.shape.end())},
          {"src", src.str()},
          {"tag", tag}};
}

llvm::Expected<Graph>
buildStageOptimizer(const Graph &micro, const std::optional<Mesh> &mesh,
                    int64_t rank, llvm::ArrayRef<ValueId> held,
                    llvm::ArrayRef<TiedMessage> tied,
                    const OptimizerConfig &config, bool distributed) {
  auto ownedBy = [&](ValueId p) {
    for (const TiedMessage &m : tied)
      if (m.param == p)
        return m.owner;
    return rank;
  };
  llvm::SmallVector<ValueId, 32> owned;
  for (ValueId p : held)
    if (ownedBy(p) == rank)
      owned.push_back(p);
  // The new values this rank sends to a holder of a tied parameter.
  llvm::SmallVector<ValueId, 2> sentNew;
  for (const TiedMessage &m : tied)
    if (m.owner == rank)
      sentNew.push_back(m.param);
  auto opt = adamw(micro, owned, config, distributed, sentNew);
  if (!opt)
    return opt.takeError();

  Graph out = emptyLike(*opt);
  out.name = micro.name + "_rank" + std::to_string(rank) + "_optimizer";
  out.mesh = mesh;
  GraphCopier c(*opt, out);
  for (ValueId v : opt->inputs())
    c.addInput(v);
  // Gradients of tied parameters owned elsewhere: inputs, sent first (before
  // the norm's all_reduce, which the owner reaches only after receiving).
  llvm::SmallVector<std::pair<const TiedMessage *, ValueId>, 2> sent;
  for (const TiedMessage &m : tied) {
    if (m.holder != rank)
      continue;
    ValueId g = micro.lookup("grad." + micro.value(m.param).name);
    if (g == kNoValue)
      return err("tied parameter %" + micro.value(m.param).name +
                 " has no gradient output");
    GraphCopier gc(micro, out);
    ValueId in = gc.addInput(g);
    if (mesh && mesh->axisSize("dp") > 1) {
      // Reduced as the owner's optimizer takes it (with ZeRO-1 its dp
      // shard, so the owner adds shard to shard): read off the parameter's
      // own optimizer graph.
      auto own = adamw(micro, {m.param}, config, distributed);
      if (!own)
        return own.takeError();
      const Value &want = own->value(own->lookup(micro.value(g).name));
      Value &got = out.value(in);
      got.type = want.type;
      got.sharding = want.sharding;
      for (llvm::StringRef a : {"dp_reduce", "dp_dim"})
        if (want.attrs.has(a))
          got.attrs.set(a, *want.attrs.get(a));
    }
    sent.push_back({&m, in});
  }
  for (auto [m, g] : sent) {
    std::string scope = "optimizer." + micro.value(m->param).name;
    out.addNode(OpKind::Send, {g}, {},
                sendAttrs(m->owner, m->gradTag, scope,
                          "pipeline: tied parameter's gradient to its owner, "
                          "pipeline rank " +
                              llvm::Twine(m->owner)),
                scope);
  }
  // Owned tied parameters: add the holders' gradients, in rank order.
  for (const TiedMessage &m : tied) {
    if (m.owner != rank)
      continue;
    const std::string &name = micro.value(m.param).name;
    ValueId in = opt->lookup("grad." + name);
    ValueId sum = c.mapped(in);
    TensorType t = out.type(sum);
    std::string scope = "optimizer." + name;
    int32_t r = out.addNode(
        OpKind::Recv, {}, {t},
        recvAttrs(m.holder, m.gradTag, t, scope,
                  "pipeline: tied parameter's gradient from pipeline rank " +
                      llvm::Twine(m.holder) + ", added to this rank's"),
        scope, {"grad." + name + ".from" + std::to_string(m.holder)});
    ValueId got = out.node(r).results[0];
    out.value(got).sharding = out.value(sum).sharding;
    int32_t a = out.addNode(OpKind::Add, {sum, got}, {t}, {}, scope,
                            {out.freshName("grad." + name + ".tied")});
    out.value(out.node(a).results[0]).sharding = out.value(sum).sharding;
    c.setMapped(in, out.node(a).results[0]);
  }
  bool acrossStages = mesh && mesh->axisSize("pp") > 1;
  for (size_t i = 0; i < opt->nodes().size(); ++i) {
    const Node &n = opt->node(i);
    if (acrossStages && n.op == OpKind::Sqrt &&
        opt->value(n.results[0]).name == "grad_norm") {
      ValueId local = c.mapped(n.operands[0]);
      Attrs attrs{{"axes", StrList{"pp"}},
                  {"reason", "pipeline: the global gradient norm sums the "
                             "squares of every stage's gradients"},
                  {"reduce", "sum"},
                  {"src", "optimizer.grad_norm"}};
      int32_t ar = out.addNode(OpKind::AllReduce, {local}, {out.type(local)},
                               attrs, n.scope, {out.freshName("sumsq.pp")});
      int32_t k = c.copyNode(n, {out.node(ar).results[0]}, {}, n.attrs);
      c.setMapped(n.results[0], out.node(k).results[0]);
      continue;
    }
    c.copyNode(int32_t(i));
  }
  llvm::SmallVector<ValueId, 64> outputs;
  for (ValueId v : opt->outputs())
    outputs.push_back(c.mapped(v));
  for (const TiedMessage &m : tied) {
    const std::string &name = micro.value(m.param).name;
    if (m.owner == rank) {
      ValueId updated = c.mapped(opt->lookup("new." + name));
      out.addNode(OpKind::Send, {updated}, {},
                  sendAttrs(m.holder, m.newTag, "optimizer." + name,
                            "pipeline: tied parameter's new value to "
                            "pipeline rank " +
                                llvm::Twine(m.holder)),
                  "optimizer." + name);
    } else if (m.holder == rank) {
      const Value &p = micro.value(m.param);
      int32_t r =
          out.addNode(OpKind::Recv, {}, {p.type},
                      recvAttrs(m.owner, m.newTag, p.type, "optimizer." + name,
                                "pipeline: tied parameter's new value "
                                "from its owner, pipeline rank " +
                                    llvm::Twine(m.owner)),
                      "optimizer." + name, {"new." + name});
      out.value(out.node(r).results[0]).sharding = p.sharding;
      outputs.push_back(out.node(r).results[0]);
    }
  }
  out.setOutputs(outputs);
  // One call for the per-parameter gradient and norm reductions.
  combineAllReduces(out);
  return out;
}

} // namespace strata::pipeline
