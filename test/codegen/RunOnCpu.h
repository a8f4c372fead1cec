//===- RunOnCpu.h - A graph on a fresh CPU device, for the codegen tests
//---===//
#pragma once

#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "test/codegen/TestGraphs.h"

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

/// Runs a model's microbatch graph `plain` and its fused form `fused` on
/// the same inputs (modelInputs; dropout seed 1337, step 3) and expects
/// every output within rel * its largest reference entry + abs.
inline void expectFusedMatchesPlain(const Graph &plain, const Graph &fused,
                                    double rel, double abs) {
  std::mt19937 rng(7);
  std::vector<HostTensor> inputs = modelInputs(plain, rng);
  ASSERT_FALSE(inputs.empty());
  LaunchContext ctx;
  ctx.seed = 1337;
  ctx.step = 3;
  std::vector<HostTensor> want = runOnCpu(plain, inputs, ctx);
  std::vector<HostTensor> got = runOnCpu(fused, inputs, ctx);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    double maxDiff = 0, maxRef = 0;
    for (int64_t i = 0; i < got[k].numElements(); ++i) {
      maxDiff = std::max(maxDiff, std::abs(got[k].get(i) - want[k].get(i)));
      maxRef = std::max(maxRef, std::abs(want[k].get(i)));
    }
    EXPECT_LE(maxDiff, rel * maxRef + abs)
        << "output %" << plain.value(plain.outputs()[k]).name;
  }
}

} // namespace strata::test
