//===- Executable.cpp - One program bound to one device
//--------------------===//
#include "runtime/Executable.h"

#include <algorithm>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Expected<std::unique_ptr<Executable>>
Executable::create(const Graph &g, BufferPlan plan, Device &device) {
  if (auto e = verifyBufferPlan(g, plan))
    return e;
  for (const Node &n : g.nodes())
    if (!device.supports(g, n))
      return err("device " + device.name() + " has no kernel for '" +
                 opName(n.op) + "' (" + n.scope + ")");
  auto module = device.prepare(g);
  if (!module)
    return module.takeError();
  return std::unique_ptr<Executable>(
      new Executable(g, std::move(plan), device, std::move(*module)));
}

llvm::Expected<std::unique_ptr<Executable>> Executable::create(const Graph &g,
                                                               Device &device) {
  auto x = create(g, planBuffers(g), device);
  if (x && (*x)->arenaBytes())
    (*x)->ownWorkspace_ = device.allocate((*x)->arenaBytes());
  return x;
}

Executable::~Executable() {
  if (ownWorkspace_)
    dev_.deallocate(ownWorkspace_);
}

llvm::Error Executable::enqueue(llvm::ArrayRef<const void *> inputs,
                                llvm::ArrayRef<void *> bound, void *workspace,
                                std::vector<void *> &outputs,
                                const LaunchContext &ctx,
                                llvm::function_ref<void(size_t)> afterNode) {
  if (inputs.size() != g_.inputs().size() ||
      (!bound.empty() && bound.size() != g_.outputs().size()))
    return err("@" + g_.name + " takes " + llvm::Twine(g_.inputs().size()) +
               " inputs and " + llvm::Twine(g_.outputs().size()) +
               " output buffers, got " + llvm::Twine(inputs.size()) + " and " +
               llvm::Twine(bound.size()));
  if (!workspace)
    workspace = ownWorkspace_;
  if (!workspace && plan_.arenaBytes)
    return err("@" + g_.name + " needs a workspace of " +
               llvm::Twine(plan_.arenaBytes) + " bytes");
  const std::vector<ValueId> &root = plan_.root;
  std::vector<void *> ptr(g_.numValues(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    ptr[g_.inputs()[i]] = const_cast<void *>(inputs[i]);
  for (size_t v = 0; v < ptr.size(); ++v)
    if (plan_.offsets[v] >= 0)
      ptr[v] = static_cast<char *>(workspace) + plan_.offsets[v];
  for (size_t o = 0; o < bound.size(); ++o) {
    ValueId v = g_.outputs()[o];
    if (!ptr[v] && root[v] == v)
      ptr[v] = bound[o];
  }
  for (size_t v = 0; v < ptr.size(); ++v) {
    ptr[v] = ptr[root[v]];
    if (!ptr[v])
      return err("@" + g_.name + ": %" + g_.value(v).name +
                 " lives outside the arena and has no buffer");
  }
  LaunchContext launch = ctx;
  launch.module = module_.get();
  llvm::SmallVector<const void *, 8> ops;
  llvm::SmallVector<void *, 4> res;
  for (size_t i = 0; i < g_.nodes().size(); ++i) {
    const Node &n = g_.node(i);
    if (n.op != OpKind::Reshape) { // else a view of its operand
      ops.clear();
      res.clear();
      for (ValueId v : n.operands)
        ops.push_back(ptr[v]);
      for (ValueId v : n.results)
        res.push_back(ptr[v]);
      dev_.launch(g_, n, ops, res, launch);
    }
    if (afterNode)
      afterNode(i);
  }
  // A bound output that lives elsewhere (an input, in the arena, a view).
  for (size_t o = 0; o < bound.size(); ++o) {
    ValueId v = g_.outputs()[o];
    if (bound[o] && ptr[v] != bound[o])
      dev_.copy(bound[o], ptr[v], g_.type(v).bytes(), ctx.stream);
  }
  if (afterNode)
    afterNode(g_.nodes().size());
  outputs.clear();
  for (size_t o = 0; o < g_.outputs().size(); ++o)
    outputs.push_back(!bound.empty() && bound[o] ? bound[o]
                                                 : ptr[g_.outputs()[o]]);
  return llvm::Error::success();
}

llvm::Error Executable::run(llvm::ArrayRef<const void *> inputs,
                            llvm::ArrayRef<void *> bound, void *workspace,
                            std::vector<void *> &outputs,
                            const LaunchContext &ctx) {
  if (auto e = enqueue(inputs, bound, workspace, outputs, ctx))
    return e;
  return dev_.synchronize();
}

llvm::Error Executable::run(llvm::ArrayRef<const void *> inputs,
                            std::vector<void *> &outputs,
                            const LaunchContext &ctx) {
  return run(inputs, {}, nullptr, outputs, ctx);
}

llvm::Expected<std::vector<HostTensor>>
Executable::runHost(llvm::ArrayRef<HostTensor> inputs,
                    const LaunchContext &ctx) {
  if (inputs.size() != g_.inputs().size())
    return err("graph @" + g_.name + " takes " +
               llvm::Twine(g_.inputs().size()) + " inputs, got " +
               llvm::Twine(inputs.size()));
  std::vector<void *> bufs;
  auto freeAll = [&] {
    for (void *b : bufs)
      dev_.deallocate(b);
  };
  std::vector<const void *> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value &v = g_.value(g_.inputs()[i]);
    if (inputs[i].type() != v.type) {
      freeAll();
      return err("input %" + v.name + " wants " + v.type.str() + ", got " +
                 inputs[i].type().str());
    }
    void *b = dev_.allocate(std::max<int64_t>(v.type.bytes(), 1));
    bufs.push_back(b);
    dev_.copyFromHost(b, inputs[i].raw(), v.type.bytes());
    ins.push_back(b);
  }
  std::vector<void *> outs;
  if (auto e = run(ins, outs, ctx)) {
    freeAll();
    return e;
  }
  std::vector<HostTensor> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    HostTensor t(g_.type(g_.outputs()[i]));
    dev_.copyToHost(t.raw(), outs[i], t.bytes());
    result.push_back(std::move(t));
  }
  llvm::Error e = dev_.synchronize();
  freeAll();
  if (e)
    return e;
  return result;
}

} // namespace strata
