//===- ParallelInterpreter.cpp - One partitioned graph on every rank ------===//
#include "runtime/parallel/ParallelInterpreter.h"

#include "runtime/parallel/Sharded.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

Sharding shardingOf(const Graph &g, ValueId v) {
  const Value &val = g.value(v);
  return val.sharding ? *val.sharding : Sharding::replicated(val.type.rank());
}

llvm::Expected<std::unique_ptr<ParallelInterpreter>>
ParallelInterpreter::create(const Graph &g, DeviceGroup &group) {
  if (g.partitioned ? !(g.mesh && *g.mesh == group.mesh())
                    : group.mesh().numDevices() != 1) {
    std::string want, have = "no mesh";
    llvm::raw_string_ostream w(want), h(have);
    printMesh(w, group.mesh());
    if (g.mesh) {
      have.clear();
      printMesh(h, *g.mesh);
    }
    return err("graph @" + g.name + " (" + h.str() +
               (g.partitioned ? ", partitioned" : ", not partitioned") +
               ") cannot run on the device group of " + w.str() +
               " (partition it over that mesh with the spmd pass)");
  }
  std::unique_ptr<ParallelInterpreter> p(new ParallelInterpreter(g, group));
  for (size_t l = 0; l < group.numLocal(); ++l) {
    auto interp = Interpreter::create(g, group.device(l));
    if (!interp)
      return interp.takeError();
    p->interps_.push_back(std::move(*interp));
  }
  return p;
}

llvm::Error
ParallelInterpreter::run(llvm::ArrayRef<std::vector<const void *>> inputs,
                         std::vector<std::vector<void *>> &outputs,
                         const LaunchContext &base) {
  if (inputs.size() != interps_.size())
    return err("inputs for " + llvm::Twine(inputs.size()) + " ranks, " +
               llvm::Twine(interps_.size()) + " here");
  outputs.assign(interps_.size(), {});
  return group_.forEachRank([&](size_t l) {
    return interps_[l]->run(inputs[l], outputs[l], group_.context(l, base));
  });
}

llvm::Expected<std::vector<HostTensor>>
ParallelInterpreter::runLogical(llvm::ArrayRef<HostTensor> inputs,
                                const LaunchContext &base) {
  if (inputs.size() != g_.inputs().size())
    return err("graph @" + g_.name + " takes " +
               llvm::Twine(g_.inputs().size()) + " inputs, got " +
               llvm::Twine(inputs.size()));
  const Mesh &mesh = group_.mesh();
  std::vector<std::vector<HostTensor>> blocks(interps_.size());
  std::vector<std::vector<const void *>> ptrs(interps_.size());
  for (size_t l = 0; l < interps_.size(); ++l) {
    if (!group_.device(l).isHostMemory())
      return err("runLogical needs host-memory devices");
    for (size_t i = 0; i < inputs.size(); ++i) {
      ValueId v = g_.inputs()[i];
      auto b =
          shardOf(inputs[i], shardingOf(g_, v), mesh, group_.globalRank(l));
      if (!b)
        return err("input %" + g_.value(v).name + ": " +
                   llvm::toString(b.takeError()));
      if (b->type() != g_.type(v))
        return err("input %" + g_.value(v).name + ": the block of " +
                   inputs[i].type().str() + " is " + b->type().str() +
                   ", the graph wants " + g_.type(v).str());
      ptrs[l].push_back(b->raw());
      blocks[l].push_back(std::move(*b));
    }
  }
  std::vector<std::vector<void *>> outs;
  if (auto e = run(ptrs, outs, base))
    return e;
  std::vector<HostTensor> result;
  for (size_t o = 0; o < g_.outputs().size(); ++o) {
    ValueId v = g_.outputs()[o];
    std::vector<HostTensor> local;
    for (size_t l = 0; l < interps_.size(); ++l) {
      HostTensor t(g_.type(v));
      std::memcpy(t.raw(), outs[l][o], t.bytes());
      local.push_back(std::move(t));
    }
    auto all = group_.allGather(local);
    if (!all)
      return all.takeError();
    auto full = gatherFull(*all, shardingOf(g_, v), mesh);
    if (!full)
      return full.takeError();
    result.push_back(std::move(*full));
  }
  return result;
}

} // namespace strata
