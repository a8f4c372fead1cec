//===- PlanExecutor.cpp - Runs a program from its memory plan -------------===//
#include "runtime/parallel/PlanExecutor.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
} // namespace

llvm::Expected<std::unique_ptr<PlanExecutor>>
PlanExecutor::create(const Graph &g, BufferPlan plan, Device &device) {
  if (plan.offsets.size() != g.numValues())
    return err("the buffer plan of @" + g.name + " has " +
               llvm::Twine(plan.offsets.size()) + " offsets for " +
               llvm::Twine(g.numValues()) + " values");
  for (const Node &n : g.nodes())
    if (!device.supports(g, n))
      return err("device " + device.name() + " has no kernel for '" +
                 opName(n.op) + "' (" + n.scope + ")");
  if (auto e = device.prepare(g))
    return e;
  return std::unique_ptr<PlanExecutor>(
      new PlanExecutor(g, std::move(plan), device));
}

llvm::Error PlanExecutor::run(llvm::ArrayRef<const void *> inputs,
                              llvm::ArrayRef<void *> bound, void *workspace,
                              std::vector<void *> &outputs,
                              const LaunchContext &ctx) {
  if (inputs.size() != g_.inputs().size() ||
      bound.size() != g_.outputs().size())
    return err("@" + g_.name + " takes " + llvm::Twine(g_.inputs().size()) +
               " inputs and " + llvm::Twine(g_.outputs().size()) +
               " output buffers, got " + llvm::Twine(inputs.size()) + " and " +
               llvm::Twine(bound.size()));
  std::vector<void *> ptr(g_.numValues(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    ptr[g_.inputs()[i]] = const_cast<void *>(inputs[i]);
  for (size_t v = 0; v < ptr.size(); ++v)
    if (plan_.offsets[v] >= 0)
      ptr[v] = static_cast<char *>(workspace) + plan_.offsets[v];
  for (size_t o = 0; o < bound.size(); ++o) {
    ValueId v = g_.outputs()[o];
    if (!ptr[v])
      ptr[v] = bound[o];
    if (!ptr[v])
      return err("@" + g_.name + ": output %" + g_.value(v).name +
                 " lives outside the arena and has no buffer");
  }
  llvm::SmallVector<const void *, 8> ops;
  llvm::SmallVector<void *, 4> res;
  for (const Node &n : g_.nodes()) {
    ops.clear();
    res.clear();
    for (ValueId v : n.operands)
      ops.push_back(ptr[v]);
    for (ValueId v : n.results)
      res.push_back(ptr[v]);
    dev_.launch(g_, n, ops, res, ctx);
  }
  // A bound output that lives elsewhere (an input, or in the arena).
  for (size_t o = 0; o < bound.size(); ++o) {
    ValueId v = g_.outputs()[o];
    if (bound[o] && ptr[v] != bound[o])
      dev_.copyToHost(bound[o], ptr[v], g_.type(v).bytes());
  }
  if (auto e = dev_.synchronize())
    return e;
  outputs.clear();
  for (size_t o = 0; o < bound.size(); ++o)
    outputs.push_back(bound[o] ? bound[o] : ptr[g_.outputs()[o]]);
  return llvm::Error::success();
}

} // namespace strata
