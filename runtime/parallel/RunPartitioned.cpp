//===- RunPartitioned.cpp - One partitioned graph on every rank -----------===//
#include "runtime/parallel/RunPartitioned.h"

#include "runtime/DeviceBuffer.h"
#include "runtime/Executable.h"
#include "runtime/parallel/Sharded.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error checkMesh(const Graph &g, const DeviceGroup &group) {
  if (g.partitioned ? g.mesh && *g.mesh == group.mesh()
                    : group.mesh().numDevices() == 1)
    return llvm::Error::success();
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
} // namespace

llvm::Expected<std::vector<HostTensor>>
runPartitioned(const Graph &g, DeviceGroup &group,
               llvm::ArrayRef<HostTensor> inputs, const LaunchContext &base) {
  if (auto e = checkMesh(g, group))
    return e;
  if (inputs.size() != g.inputs().size())
    return err("graph @" + g.name + " takes " + llvm::Twine(g.inputs().size()) +
               " inputs, got " + llvm::Twine(inputs.size()));
  const Mesh &mesh = group.mesh();
  size_t n = group.numLocal();
  std::vector<std::unique_ptr<Executable>> exes;
  std::vector<std::vector<DeviceBuffer>> buffers(n);
  std::vector<std::vector<HostTensor>> blocks(n);
  std::vector<std::vector<const void *>> ptrs(n);
  for (size_t l = 0; l < n; ++l) {
    auto x = Executable::create(g, group.device(l));
    if (!x)
      return x.takeError();
    exes.push_back(std::move(*x));
    for (size_t i = 0; i < inputs.size(); ++i) {
      ValueId v = g.inputs()[i];
      auto b = shardOf(inputs[i], shardingOf(g, v), mesh, group.globalRank(l));
      if (!b)
        return err("input %" + g.value(v).name + ": " +
                   llvm::toString(b.takeError()));
      if (b->type() != g.type(v))
        return err("input %" + g.value(v).name + ": the block of " +
                   inputs[i].type().str() + " is " + b->type().str() +
                   ", the graph wants " + g.type(v).str());
      buffers[l].emplace_back(group.device(l), b->type());
      buffers[l].back().fromHost(*b);
      ptrs[l].push_back(buffers[l].back().data());
      blocks[l].push_back(std::move(*b)); // until its copy has run
    }
    if (auto e = group.device(l).synchronize())
      return e;
  }
  std::vector<std::vector<void *>> outs(n);
  if (auto e = group.forEachRank([&](size_t l) {
        return exes[l]->run(ptrs[l], outs[l], group.context(l, base));
      }))
    return e;
  // Every rank's outputs back to the host, one wait per device.
  std::vector<std::vector<HostTensor>> local(g.outputs().size());
  for (size_t l = 0; l < n; ++l) {
    for (size_t o = 0; o < g.outputs().size(); ++o) {
      HostTensor &t = local[o].emplace_back(g.type(g.outputs()[o]));
      group.device(l).copyToHost(t.raw(), outs[l][o], t.bytes());
    }
    if (auto e = group.device(l).synchronize())
      return e;
  }
  std::vector<HostTensor> result;
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    ValueId v = g.outputs()[o];
    auto all = group.allGather(local[o]);
    if (!all)
      return all.takeError();
    auto full = gatherFull(*all, shardingOf(g, v), mesh);
    if (!full)
      return full.takeError();
    result.push_back(std::move(*full));
  }
  return result;
}

} // namespace strata
