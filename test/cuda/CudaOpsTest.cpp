//===- CudaOpsTest.cpp - Each op's CUDA kernel against the CPU kernel -----===//
//
// Every node of the IR corpus (test/corpus, which uses every op) that the
// CUDA device runs today is run alone in interpret mode and on the CPU
// device's kernel with the same random inputs; results agree to 1e-5
// relative (different exp/log/tanh implementations, each within a few ulp;
// row sums in f64 on both). The ops the backend must run through codegen
// are listed, so a kernel that stops being supported fails here.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include "ir/IRText.h"
#include "ir/Op.h"
#include "runtime/cpu/CpuDevice.h"
#include "test/codegen/TestGraphs.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace strata {
namespace {

/// Runs node `n` of `g` on `d` (prepared as `m`); host tensors in and out.
std::vector<HostTensor> runOnDevice(Device &d, const KernelModule *m,
                                    const Graph &g, const Node &n,
                                    llvm::ArrayRef<HostTensor> inputs) {
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
  LaunchContext ctx;
  ctx.seed = 99;
  ctx.step = 5;
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
    ADD_FAILURE() << opName(n.op).str() << ": " << llvm::toString(std::move(e));
    return {};
  }
  return out;
}

TEST(CudaOps, EveryCorpusOpTheBackendRunsMatchesTheCpuKernel) {
  auto dev = CudaDevice::create(cuda::makeInterpretDriver());
  ASSERT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  CudaDevice &d = **dev;
  CpuDevice cpu;
  std::set<std::string> covered;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(STRATA_CORPUS_DIR, ec), end;
       it != end && !ec; it.increment(ec)) {
    if (!llvm::StringRef(it->path()).endswith(".ir"))
      continue;
    auto g = parseGraphFile(it->path());
    ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
    auto module = d.prepare(*g);
    ASSERT_TRUE(bool(module))
        << it->path() << ": " << llvm::toString(module.takeError());
    auto cpuModule = cpu.prepare(*g);
    ASSERT_TRUE(bool(cpuModule));
    std::mt19937 rng(3);
    for (const Node &n : g->nodes()) {
      if (n.op == OpKind::Reshape || !d.supports(*g, n) || !cpu.supports(*g, n))
        continue;
      // Positive inputs keep log, sqrt and rsqrt finite.
      std::vector<HostTensor> inputs;
      for (ValueId v : n.operands)
        inputs.push_back(test::randomTensor(g->type(v), rng, 0.5, 2.0));
      std::vector<HostTensor> got =
          runOnDevice(d, module->get(), *g, n, inputs);
      std::vector<HostTensor> want =
          runOnDevice(cpu, cpuModule->get(), *g, n, inputs);
      ASSERT_EQ(got.size(), want.size()) << opName(n.op).str();
      covered.insert(opName(n.op).str());
      for (size_t r = 0; r < got.size(); ++r)
        for (int64_t i = 0; i < got[r].numElements(); ++i) {
          double w = want[r].get(i), x = got[r].get(i);
          if (x == w || (std::isnan(x) && std::isnan(w)))
            continue; // infinities and NaN literals included
          ASSERT_LE(std::abs(x - w), 1e-5 * std::max(1.0, std::abs(w)))
              << it->path() << ": " << opName(n.op).str() << " (" << n.scope
              << ") result " << r << " element " << i << ": cuda-interpret "
              << x << ", cpu " << w;
        }
    }
  }
  std::string list;
  for (const std::string &op : covered)
    list += op + " ";
  for (const char *op :
       {"add",       "sub",     "mul",   "div",     "exp",       "log",
        "sqrt",      "rsqrt",   "tanh",  "gelu",    "gelu_grad", "silu",
        "silu_grad", "square",  "scale", "maximum", "minimum",   "layer_norm",
        "rms_norm",  "softmax", "fused"})
    EXPECT_TRUE(covered.count(op)) << op << " not run; ran: " << list;
  std::cout << "ops run on cuda-interpret: " << list << "\n";
}

} // namespace
} // namespace strata
