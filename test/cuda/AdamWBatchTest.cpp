//===- AdamWBatchTest.cpp - Every AdamW update of a program in one launch -===//
//
// The CUDA device runs an optimizer program's adamw_updates (and the clip
// coefficient's muls they fold) as one launch of the batched kernel
// (runtime/cuda/AdamWBatch.h). Compared with the CPU device running every
// node on its own: each element sees the same operations in the same order
// (the folded product g * coef is rounded once, as the mul rounds it), but
// the CPU's AdamW is compiled for this machine (-march=native: its
// multiply-adds may fuse, rounding once where interpret mode rounds twice),
// so within 1e-6 relative (a few f32 ulps) rather than bitwise. Tensors of
// several chunks, updates without a folded mul and an update whose result
// is read before the next one (the batch must flush there) are covered.
//
//===----------------------------------------------------------------------===//
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include "ir/IRText.h"
#include "test/codegen/TestGraphs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

namespace strata {
namespace {

struct Param {
  std::string name, shape;
  double weightDecay;
  bool clipped; // its gradient goes through mul(g, coef)
};

/// An optimizer program over `params`; with `probe`, a node reading the
/// first update's new parameter sits before the second update.
std::string optimizerIr(const std::vector<Param> &params, bool probe) {
  std::string sig = "graph @opt(%lr: f32[], %step: f32[], %coef: f32[]";
  std::string body, ret;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param &p = params[i];
    std::string t = "f32[" + p.shape + "]", n = p.name;
    sig += ", %" + n + ": " + t + " {param}, %g." + n + ": " + t + ", %m." +
           n + ": " + t + ", %v." + n + ": " + t;
    std::string grad = "%g." + n;
    if (p.clipped) {
      body += "  %c." + n + " = mul(%g." + n + ", %coef) : " + t + "\n";
      grad = "%c." + n;
    }
    body += "  %new." + n + ", %new.m." + n + ", %new.v." + n +
            " = adamw_update(%" + n + ", " + grad + ", %m." + n + ", %v." + n +
            ", %lr, %step) {beta1=0.9, beta2=0.95, eps=1e-08, weight_decay=" +
            std::to_string(p.weightDecay) + "} : " + t + ", " + t + ", " + t +
            "\n";
    ret += std::string(ret.empty() ? "" : ", ") + "%new." + n + ", %new.m." +
           n + ", %new.v." + n;
    if (probe && i == 0) {
      body += "  %probe = mul(%new." + n + ", %coef) : " + t + "\n";
      ret += ", %probe";
    }
  }
  return sig + ") {\n" + body + "  return " + ret + "\n}\n";
}

std::vector<HostTensor> inputsOf(const Graph &g) {
  std::mt19937 rng(7);
  std::vector<HostTensor> in;
  for (ValueId v : g.inputs()) {
    const std::string &name = g.value(v).name;
    if (name == "lr")
      in.push_back(HostTensor::scalar(3e-3));
    else if (name == "step")
      in.push_back(HostTensor::scalar(3));
    else if (name == "coef")
      in.push_back(HostTensor::scalar(0.75));
    else if (llvm::StringRef(name).startswith("v."))
      in.push_back(test::randomTensor(g.type(v), rng, 0.0, 1e-3)); // >= 0
    else
      in.push_back(test::randomTensor(g.type(v), rng, -1.0, 1.0));
  }
  return in;
}

/// Runs the program on the CPU device and on cuda-interpret; expects every
/// output within 1e-6 relative (to max(1, |x|)) and `launches` launches of
/// the batched kernel.
void expectBatched(const std::string &ir, int64_t launches) {
  auto g = parseGraph(ir);
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError()) << "\n" << ir;
  std::vector<HostTensor> in = inputsOf(*g);
  CpuDevice cpu;
  auto cpuExe = Executable::create(*g, cpu);
  ASSERT_TRUE(bool(cpuExe)) << llvm::toString(cpuExe.takeError());
  auto want = (*cpuExe)->runHost(in, {});
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  auto dev = CudaDevice::create(cuda::makeInterpretDriver());
  ASSERT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  std::vector<HostTensor> got;
  {
    auto exe = Executable::create(*g, **dev);
    ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
    auto out = (*exe)->runHost(in, {});
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    got = std::move(*out);
  }
  EXPECT_EQ((*dev)->adamwLaunches(), launches);
  ASSERT_EQ(got.size(), want->size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].bytes(), (*want)[i].bytes());
    for (int64_t k = 0; k < got[i].numElements(); ++k) {
      double w = (*want)[i].get(k), d = std::abs(got[i].get(k) - w);
      worst = std::max(worst, d / std::max(1.0, std::abs(w)));
      ASSERT_LE(d, 1e-6 * std::max(1.0, std::abs(w)))
          << "output " << i << " element " << k << ": cuda " << got[i].get(k)
          << ", cpu " << w;
    }
  }
  std::cout << "largest difference: " << worst << "\n";
}

const std::vector<Param> kParams = {
    {"w0", "300,200", 0.1, true}, // 60000 elements: two chunks
    {"b0", "7", 0.0, true},
    {"w1", "33,5", 0.1, false}, // an update without a folded mul
    {"w2", "65537", 0.05, true}, // three chunks, the last of one element
};

TEST(AdamWBatch, EveryUpdateInOneLaunchMatchesTheCpu) {
  expectBatched(optimizerIr(kParams, /*probe=*/false), 1);
}

TEST(AdamWBatch, AReadOfAPendingUpdateFlushesTheBatchFirst) {
  // The probe reads w0's new value: w0's update launches before it, alone;
  // b0's mul, pending then, runs as its own kernel; the rest is a second
  // launch.
  expectBatched(optimizerIr(kParams, /*probe=*/true), 2);
}

} // namespace
} // namespace strata
