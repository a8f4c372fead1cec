//===- RunOnCpu.h - A graph on a fresh CPU device, for the codegen tests
//---===//
#pragma once

#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::test {

/// Runs `g` on `inputs`; an error fails the test and returns no outputs.
inline std::vector<HostTensor> runOnCpu(const Graph &g,
                                        llvm::ArrayRef<HostTensor> inputs,
                                        const LaunchContext &ctx) {
  CpuDevice cpu;
  auto interp = Executable::create(g, cpu);
  if (!interp) {
    ADD_FAILURE() << toString(interp.takeError());
    return {};
  }
  auto out = (*interp)->runHost(inputs, ctx);
  if (!out) {
    ADD_FAILURE() << toString(out.takeError());
    return {};
  }
  return std::move(*out);
}

} // namespace strata::test
