//===- CudaOpsTest.cpp - Each op's CUDA kernel against the CPU kernel -----===//
//
// Every node of the IR corpus (test/corpus, which uses every op) that the
// CUDA device runs today is run alone in interpret mode and on the CPU
// device's kernel with the same random inputs; f32 results agree to 1e-5
// relative (different exp/log/tanh implementations, each within a few ulp;
// row sums in f64 on both; attention's sums in another order: its
// gradients, where terms cancel, differ by up to ~6e-6), f64 results to
// 1e-12 (the same formulas, sums in another order: ~1e-15 seen), and the
// ops that copy or add in the CPU kernel's order (kBitwise) bitwise. The
// ops the backend must run are listed, so a kernel that stops being
// supported fails here. test/corpus/cuda_shapes.ir holds the hand-written
// kernels' cases: sizes that are no multiple of a block or tile, ids and
// labels outside the table, GQA / MQA, causal, windowed and full attention.
// cuda_gpu_test (label gpu) runs the same comparison on GPU 0 and skips
// without one.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/OpKernels.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include "codegen/NvrtcCompiler.h"
#include "ir/IRText.h"
#include "ir/Op.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/Widen.h"
#include "test/codegen/TestGraphs.h"
#include "test/cuda/RunNode.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

namespace strata {
namespace {

/// The launch of the corpus nodes. Partitioned graphs run as their last
/// rank: every axis coordinate is past 0, so the rank-dependent ops'
/// offsets are too.
LaunchContext corpusLaunch(const Graph &g) {
  LaunchContext ctx;
  ctx.seed = 99;
  ctx.step = 5;
  if (g.mesh) {
    ctx.mesh = &*g.mesh;
    ctx.rank = g.mesh->numDevices() - 1;
  }
  return ctx;
}

/// Ops whose kernels do what the CPU kernel does in the same order: the
/// same bits.
const std::set<std::string> kBitwise = {
    "fill",   "gather", "scatter_add", "transpose",   "broadcast",  "slice",
    "concat", "iota",   "reduce_max",  "shard_slice", "pick_label", "one_hot"};

TEST(CudaOps, EveryCorpusOpTheBackendRunsMatchesTheCpuKernel) {
#ifdef STRATA_CUDA_GPU
  // cuda_gpu_test (label gpu): the same comparison on GPU 0.
  auto driver = cuda::openRealDriver(0);
  if (!driver)
    GTEST_SKIP() << "no GPU: " << llvm::toString(driver.takeError());
  auto dev = CudaDevice::create(std::move(*driver));
#else
  auto dev = CudaDevice::create(cuda::makeInterpretDriver());
#endif
  ASSERT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  CudaDevice &d = **dev;
  CpuDevice cpu;
  std::set<std::string> covered;
  // The largest difference seen per op and dtype (relative, at least 1).
  std::map<std::string, double> maxDiff;
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
      // Collectives need communicators (test/parallel runs them); 16-bit
      // ops run on f32 copies of these kernels (CudaGemmTest compares them).
      if (n.op == OpKind::Reshape || isCollective(n.op) || !d.supports(*g, n) ||
          !cpu.supports(*g, n) || cuda::hasFloat16(*g, n))
        continue;
      // Positive inputs keep log, sqrt and rsqrt finite; integers (ids,
      // labels) in [0, 16) run past the corpus's small tables and class
      // blocks, so ids outside them and on other ranks are covered.
      std::vector<HostTensor> inputs;
      for (ValueId v : n.operands)
        inputs.push_back(test::randomTensor(g->type(v), rng, 0.5, 2.0, 16));
      std::vector<HostTensor> got =
          test::runNode(d, module->get(), *g, n, inputs, corpusLaunch(*g));
      std::vector<HostTensor> want =
          test::runNode(cpu, cpuModule->get(), *g, n, inputs, corpusLaunch(*g));
      ASSERT_EQ(got.size(), want.size()) << opName(n.op).str();
      covered.insert(opName(n.op).str());
      bool bitwise = kBitwise.count(opName(n.op).str());
      for (size_t r = 0; r < got.size(); ++r) {
        DType dt = got[r].type().dtype;
        double &worst = maxDiff[(opName(n.op) + " " + dtypeName(dt)).str()];
        for (int64_t i = 0; i < got[r].numElements(); ++i) {
          double w = want[r].get(i), x = got[r].get(i);
          if (x == w || (std::isnan(x) && std::isnan(w)))
            continue; // infinities and NaN literals included
          double diff = std::abs(x - w) / std::max(1.0, std::abs(w));
          worst = std::max(worst, diff);
          ASSERT_LE(diff, bitwise            ? 0.0
                          : dt == DType::F64 ? 1e-12
                                             : 1e-5)
              << it->path() << ": " << opName(n.op).str() << " (" << n.scope
              << ") result " << r << " element " << i << ": cuda-interpret "
              << x << ", cpu " << w;
        }
      }
    }
  }
  std::string list;
  for (const std::string &op : covered)
    list += op + " ";
  for (const char *op :
       {"add", "sub", "mul", "div", "exp", "log", "sqrt", "rsqrt", "tanh",
        "gelu", "gelu_grad", "silu", "silu_grad", "square", "scale", "maximum",
        "minimum", "layer_norm", "rms_norm", "softmax", "fused",
        // Hand-written kernels (runtime/cuda/kernels).
        "fill", "gather", "scatter_add", "cross_entropy", "cross_entropy_grad",
        "adamw_update", "attention", "attention_grad", "reduce_sum",
        "reduce_max", "reduce_mean", "transpose", "broadcast", "slice",
        "concat", "iota", "rope", "shard_slice", "pick_label", "one_hot"})
    EXPECT_TRUE(covered.count(op)) << op << " not run; ran: " << list;
  std::cout << "ops run on cuda-interpret: " << list << "\n";
  for (const auto &[op, diff] : maxDiff)
    std::cout << "  " << op << ": max difference " << diff << "\n";
}

#ifndef STRATA_CUDA_GPU // host-only checks: cuda_test runs them
TEST(CudaOps, HandWrittenKernelsRefuseOperandsTheyDoNotTake) {
  // i64 ids and a head dim past the attention kernels' 128 have no kernel:
  // the launcher table says so (and the device does not claim the node)
  // rather than running a kernel on what it does not read correctly.
  auto g = parseGraph(R"(graph @refused(
    %t: f32[8,4],
    %ids: i64[3],
    %q: f32[1,4,2,136],
    %ids32: i32[3]) {
  %e = gather(%t, %ids) : f32[3,4]
  %a = attention(%q, %q, %q) {causal=true} : f32[1,4,2,136]
  %ok = gather(%t, %ids32) : f32[3,4]
  return %e, %a, %ok
}
)");
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  EXPECT_EQ(cuda::opLauncher(*g, g->nodes()[0]), nullptr);
  EXPECT_EQ(cuda::opLauncher(*g, g->nodes()[1]), nullptr);
  EXPECT_NE(cuda::opLauncher(*g, g->nodes()[2]), nullptr);
}

TEST(CudaOps, HandWrittenKernelsCompileForTheGpuWithoutSpills) {
  // Interpret mode compiles them with the host compiler; NVRTC must take
  // the same text (for sm_90: one architecture keeps the test short), and
  // ptxas must keep every kernel in registers (no spills, no local memory)
  // and under 48 KiB of static shared memory. The exception: the rope
  // table's double sin and cos keep a small local array for the reduction
  // of huge arguments (CUDA's slow path), in a kernel of S x D/2 threads.
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << llvm::toString(std::move(e));
  auto r = codegen::compileCubinWithLog(cuda::opKernelSource(), 90,
                                        {"--ptxas-options=-v"},
                                        "runtime/cuda/kernels");
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  auto kernels = codegen::parsePtxasReport(r->log);
  ASSERT_TRUE(bool(kernels)) << llvm::toString(kernels.takeError());
  EXPECT_GE(kernels->size(), 38u);
  for (const codegen::KernelResources &k : *kernels) {
    EXPECT_EQ(k.spillStores + k.spillLoads, 0) << k.name;
    if (!llvm::StringRef(k.name).startswith("strata_rope_table")) {
      EXPECT_EQ(k.stackFrame, 0) << k.name;
    }
    EXPECT_LE(k.sharedBytes, 48 * 1024) << k.name;
  }
}

/// Launches strata_attn_fwd_f32 on a block of 64 threads, and exits 0 if
/// that returns.
void launchAttentionOnABlockOf64() {
  auto driver = cuda::makeInterpretDriver();
  auto m = driver->loadModule(cuda::opKernelSource(), "runtime/cuda/kernels");
  auto f = m ? driver->function(**m, "strata_attn_fwd_f32")
             : llvm::Expected<cuda::Function>(m.takeError());
  auto s = driver->createStream();
  auto buffer = driver->allocate(4 * 16 * 4);
  if (!f || !s || !buffer)
    std::exit(0); // not the death expected
  void *q = reinterpret_cast<void *>(*buffer);
  void *out = static_cast<char *>(q) + 3 * 16 * 4;
  struct {
    long long B = 1, S = 4, Hq = 1, Hkv = 1, D = 4, window = 0;
    int causal = 1;
  } dims; // kernels/Attention.cu's AttnDims
  double scale = 0.5;
  void *params[] = {&q, &q, &q, &out, &dims, &scale};
  llvm::consumeError(driver->launch(*f, {1, 1, 1}, {64, 1, 1}, 0, *s, params));
  llvm::consumeError(driver->synchronize(*s));
  std::exit(0);
}

TEST(CudaOpsDeathTest, AttentionLaunchedWithTheWrongBlockTraps) {
  // Its threads map to the rows of a query tile: a block of 64 instead of
  // 128 would leave rows unwritten, so the kernel traps (the process ends,
  // as a GPU's context would).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(launchAttentionOnABlockOf64(), "");
}

#endif // STRATA_CUDA_GPU

} // namespace
} // namespace strata
