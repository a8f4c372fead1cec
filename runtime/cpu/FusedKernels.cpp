//===- FusedKernels.cpp - Fused nodes on the CPU: generated C++ -----------===//
////
#include "runtime/cpu/FusedKernels.h"

#include "codegen/Renderer.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/HostCompiler.h"
#include "runtime/kernels/Float16.h"
#include "runtime/kernels/Parallel.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace strata {

namespace {

/// The C++ calling convention of codegen/Renderer.h.
using KernelFn = void (*)(const void *const *in, void *const *out,
                          int64_t begin, int64_t end, uint64_t seed,
                          uint64_t step);

struct LoadedKernel {
  codegen::KernelPlan plan;
  KernelFn fn = nullptr;
};

// The kernels of one graph's fused nodes, by body (Node::body, shared by
// copies of a node; the graph, and so the body, outlives the module).
class CpuKernelModule : public KernelModule {
public:
  std::map<const Graph *, LoadedKernel> kernels;
};

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

// Elements per parallel chunk, as runtime/kernels' elementwise loops.
constexpr int64_t kElemGrain = 32768;

// -O3 -march=native; no errno or FP-trap side effects to preserve and
// `omp simd` honoured, so the loops vectorize with unchanged results.
constexpr llvm::StringLiteral kFlags[] = {
    "-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math",
    "-fopenmp-simd"};

// Rows of a column-sum block hold ~kSumBlock elements: the blocks (not the
// threads) fix where partial sums split, so results do not depend on the
// thread count.
constexpr int64_t kSumBlock = 8192;

// A kernel with column sums (codegen/KernelPlan.h): each call covers one
// block of whole rows and adds its column sums into that block's f64 row;
// the rows are then summed in block order into the results.
void runWithColumnSums(const codegen::KernelPlan &p, const LoadedKernel &k,
                       llvm::ArrayRef<const void *> in,
                       llvm::ArrayRef<void *> results,
                       const LaunchContext &ctx) {
  const int64_t cols = p.inner(), rows = p.numElements() / cols;
  const int64_t blockRows = std::max<int64_t>(1, kSumBlock / cols);
  const int64_t blocks = (rows + blockRows - 1) / blockRows;
  const size_t nSums = p.sums.size();
  std::vector<double> partial(nSums * blocks * cols, 0.0);
  auto part = [&](size_t s, int64_t b) {
    return &partial[(s * blocks + b) * cols];
  };
  kernels::parallelFor(
      0, blocks, std::max<int64_t>(1, kElemGrain / (blockRows * cols)),
      [&](int64_t lo, int64_t hi) {
        llvm::SmallVector<void *, 4> out(results.begin(), results.end());
        for (int64_t b = lo; b < hi; ++b) {
          for (size_t s = 0; s < nSums; ++s)
            out[p.sums[s].store] = part(s, b);
          k.fn(in.data(), out.data(), b * blockRows * cols,
               std::min(rows, (b + 1) * blockRows) * cols, ctx.seed, ctx.step);
        }
      });
  for (size_t s = 0; s < nSums; ++s) {
    void *dst = results[p.sums[s].store];
    DType dt = p.body->type(p.stores[p.sums[s].store]).dtype;
    for (int64_t c = 0; c < cols; ++c) {
      double acc = 0;
      for (int64_t b = 0; b < blocks; ++b)
        acc += part(s, b)[c];
      if (dt == DType::F64)
        static_cast<double *>(dst)[c] = acc;
      else if (dt == DType::F32)
        static_cast<float *>(dst)[c] = float(acc);
      else // bf16 / f16: via f32, as the unfused kernel rounds its f32 sum
        static_cast<uint16_t *>(dst)[c] =
            dt == DType::BF16 ? kernels::floatToBf16(float(acc))
                              : kernels::floatToHalf(float(acc));
    }
  }
}

} // namespace

bool fusedKernelSupports(const Node &node) {
  if (!node.body)
    return false;
  auto plan = codegen::planKernel(*node.body);
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return false;
  }
  return plan->anchor < 0 ||
         cpuKernelSupports(*node.body, node.body->node(plan->anchor));
}

llvm::Expected<std::unique_ptr<KernelModule>>
prepareFusedKernels(const Graph &g) {
  std::vector<const Graph *> bodies;
  std::vector<codegen::KernelPlan> plans;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused || !n.body ||
        llvm::is_contained(bodies, n.body.get()))
      continue;
    auto plan = codegen::planKernel(*n.body);
    if (!plan)
      return plan.takeError();
    bodies.push_back(n.body.get());
    plans.push_back(std::move(*plan));
  }
  if (plans.empty())
    return nullptr;
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cpp);
  auto lib = buildSharedLibrary(source.text, kFlags, "fused");
  if (!lib)
    return lib.takeError();
  // Never closed: a kernel may still be queued on a stream when its module
  // goes; dlopen counts the references of a library loaded again.
  void *handle = dlopen(lib->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return err("cannot load " + *lib + " (" + dlerror() + ")");
  auto module = std::make_unique<CpuKernelModule>();
  for (size_t k = 0; k < plans.size(); ++k) {
    auto fn =
        reinterpret_cast<KernelFn>(dlsym(handle, source.symbols[k].c_str()));
    if (!fn)
      return err(*lib + " has no kernel " + source.symbols[k]);
    module->kernels[bodies[k]] = LoadedKernel{std::move(plans[k]), fn};
  }
  return module;
}

llvm::Error runFusedKernel(const Graph &g, const Node &node,
                           llvm::ArrayRef<const void *> operands,
                           llvm::ArrayRef<void *> results,
                           const LaunchContext &ctx) {
  const auto *module = static_cast<const CpuKernelModule *>(ctx.module);
  auto it = module ? module->kernels.find(node.body.get())
                   : decltype(module->kernels)::const_iterator();
  if (!module || it == module->kernels.end())
    return err("fused node (" + node.scope +
               ") was not prepared for this device (Device::prepare)");
  const LoadedKernel *k = &it->second;
  const codegen::KernelPlan &p = k->plan;
  const Graph &body = *p.body;
  auto operandOf = [&](ValueId v) {
    return operands[llvm::find(body.inputs(), v) - body.inputs().begin()];
  };
  if (p.anchor >= 0) {
    const Node &anchor = body.node(p.anchor);
    llvm::SmallVector<const void *, 2> in;
    for (ValueId v : anchor.operands)
      in.push_back(operandOf(v));
    if (auto e = runCpuKernel(body, anchor, in, {results[p.anchorResult]}, ctx))
      return e;
  }
  llvm::SmallVector<const void *, 8> in;
  for (const codegen::KernelLoad &l : p.loads)
    in.push_back(l.operand < 0 ? results[p.anchorResult] : operands[l.operand]);
  llvm::SmallVector<void *, 4> out(results.begin(), results.end());
  if (p.sums.empty() && p.isRowKernel()) { // whole rows per call
    const int64_t C = p.inner();
    kernels::parallelFor(
        0, p.numElements() / C, std::max<int64_t>(1, kElemGrain / C),
        [&](int64_t lo, int64_t hi) {
          k->fn(in.data(), out.data(), lo * C, hi * C, ctx.seed, ctx.step);
        });
    return llvm::Error::success();
  }
  if (p.sums.empty()) {
    kernels::parallelFor(
        0, p.numElements(), kElemGrain, [&](int64_t lo, int64_t hi) {
          k->fn(in.data(), out.data(), lo, hi, ctx.seed, ctx.step);
        });
    return llvm::Error::success();
  }
  runWithColumnSums(p, *k, in, out, ctx);
  return llvm::Error::success();
}

} // namespace strata
