//===- RunNode.h - One node on a device, host tensors in and out ----------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/HostTensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace strata::test {

/// Runs node `n` of `g` on `d` from module `m` (Device::prepare's for `g`)
/// with `base`'s seed, step, mesh and rank; an error fails the test and
/// returns no results.
inline std::vector<HostTensor> runNode(Device &d, const KernelModule *m,
                                       const Graph &g, const Node &n,
                                       llvm::ArrayRef<HostTensor> inputs,
                                       const LaunchContext &base) {
  std::vector<void *> buffers;
  std::vector<const void *> ops;
  for (const HostTensor &t : inputs) {
    void *p = d.allocate(std::max<int64_t>(t.type().bytes(), 1));
    d.copyFromHost(p, t.raw(), t.type().bytes());
    buffers.push_back(p);
    ops.push_back(p);
  }
  std::vector<void *> res;
  for (ValueId r : n.results) {
    res.push_back(d.allocate(std::max<int64_t>(g.type(r).bytes(), 1)));
    buffers.push_back(res.back());
  }
  LaunchContext ctx = base;
  ctx.module = m;
  d.launch(g, n, ops, res, ctx);
  std::vector<HostTensor> out;
  for (size_t k = 0; k < res.size(); ++k) {
    out.emplace_back(g.type(n.results[k]));
    d.copyToHost(out.back().raw(), res[k], out.back().type().bytes());
  }
  llvm::Error e = d.synchronize();
  for (void *p : buffers)
    d.deallocate(p);
  if (e) {
    ADD_FAILURE() << opName(n.op).str() << " (" << n.scope
                  << "): " << llvm::toString(std::move(e));
    return {};
  }
  return out;
}

} // namespace strata::test
