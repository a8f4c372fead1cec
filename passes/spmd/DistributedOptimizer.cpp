//===- DistributedOptimizer.cpp - The optimizer graph under data parallelism //
#include "passes/spmd/DistributedOptimizer.h"

#include "llvm/ADT/StringMap.h"

#include <optional>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
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

} // namespace

void seedDataParallelOptimizer(Graph &opt, int64_t dp, bool distributed) {
  if (dp == 1)
    return;
  llvm::StringMap<Sharding> zero; // by parameter name
  for (ValueId v : opt.inputs()) {
    Value &in = opt.value(v);
    if (in.isParam() && distributed) {
      if (auto s = zeroSharding(in, dp))
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

llvm::Error
gatherUpdatedParams(Graph &opt,
                    llvm::function_ref<bool(llvm::StringRef)> inProgram) {
  llvm::SmallVector<ValueId, 32> outs(opt.outputs().begin(),
                                      opt.outputs().end());
  for (ValueId &o : outs) {
    // A copy: the value is renamed below.
    std::string outName = opt.value(o).name;
    llvm::StringRef name = outName;
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
    if (!inProgram(name))
      continue;
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

} // namespace strata
