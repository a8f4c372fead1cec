//===- FusedGpuTest.cpp - Fused CUDA kernels on a GPU against the CPU -----===//
//
// CTest label `gpu`. The driver is loaded with dlopen (libcuda.so.1), so the
// test builds and runs anywhere and skips with a message when there is no
// driver or device. On a GPU: every fused kernel of the GPT and Llama blocks
// (with dropout) and of gpt_tiny is compiled by NVRTC for the device's
// architecture, loaded with the driver API and run on random inputs; its
// outputs are compared with the generated CPU kernels of the same nodes.
// Anchored kernels get the anchor's matmul result computed on the CPU and
// uploaded into the result buffer that holds it (the in-place convention of
// codegen/KernelPlan.h), which the kernel also reads as load 0.
//
// Each kernel also runs on one block with every buffer off its 16-byte
// alignment (the element-by-element path) and must give the same bits: any
// grid, either path.
//
// Tolerance: as FusedCpuTest, |gpu - cpu| <= 1e-5 * (|cpu| + 1): CUDA's
// tanhf/expf/erff are within 2 ulp of glibc's, and nvcc contracts to FMA
// like the host compiler; dropout masks are integer compares and match.
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "codegen/NvrtcCompiler.h"
#include "codegen/Renderer.h"
#include "ir/IRText.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "test/codegen/RunOnCpu.h"

#include <cuda.h>
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <iostream>

namespace strata {
namespace {

// The driver entry points the test uses, resolved from libcuda.so.1.
struct Driver {
  void *lib = nullptr;
#define STRATA_CU(fn) decltype(&::fn) fn = nullptr;
  STRATA_CU(cuInit)
  STRATA_CU(cuDeviceGetCount)
  STRATA_CU(cuDeviceGet)
  STRATA_CU(cuDeviceGetAttribute)
  STRATA_CU(cuDevicePrimaryCtxRetain)
  STRATA_CU(cuCtxSetCurrent)
  STRATA_CU(cuModuleLoadData)
  STRATA_CU(cuModuleGetFunction)
  STRATA_CU(cuModuleUnload)
  STRATA_CU(cuMemAlloc)
  STRATA_CU(cuMemFree)
  STRATA_CU(cuMemcpyHtoD)
  STRATA_CU(cuMemcpyDtoH)
  STRATA_CU(cuLaunchKernel)
  STRATA_CU(cuCtxSynchronize)
  STRATA_CU(cuGetErrorString)
#undef STRATA_CU

  /// Loads the driver; an empty string on success, else why not.
  std::string load() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return std::string("no CUDA driver (") + dlerror() + ")";
    auto get = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, symbol));
      return fn != nullptr;
    };
    // cuda.h maps some names to their _v2 ABI; dlsym needs the real symbol.
    bool ok =
        get(cuInit, "cuInit") && get(cuDeviceGetCount, "cuDeviceGetCount") &&
        get(cuDeviceGet, "cuDeviceGet") &&
        get(cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
        get(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
        get(cuCtxSetCurrent, "cuCtxSetCurrent") &&
        get(cuModuleLoadData, "cuModuleLoadData") &&
        get(cuModuleGetFunction, "cuModuleGetFunction") &&
        get(cuModuleUnload, "cuModuleUnload") &&
        get(cuMemAlloc, "cuMemAlloc_v2") && get(cuMemFree, "cuMemFree_v2") &&
        get(cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
        get(cuMemcpyDtoH, "cuMemcpyDtoH_v2") &&
        get(cuLaunchKernel, "cuLaunchKernel") &&
        get(cuCtxSynchronize, "cuCtxSynchronize") &&
        get(cuGetErrorString, "cuGetErrorString");
    return ok ? "" : "the CUDA driver lacks an entry point the test needs";
  }
  std::string error(CUresult r) const {
    const char *s = nullptr;
    cuGetErrorString(r, &s);
    return s ? s : "CUDA error " + std::to_string(int(r));
  }
};

#define ASSERT_CU(call)                                                        \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    ASSERT_EQ(r_, CUDA_SUCCESS) << #call << ": " << cu.error(r_);              \
  } while (0)

class FusedGpu : public testing::Test {
protected:
  void SetUp() override {
    std::string why = cu.load();
    if (!why.empty())
      GTEST_SKIP() << "skipping GPU test: " << why;
    if (auto e = codegen::nvrtcAvailable())
      GTEST_SKIP() << "skipping GPU test: " << toString(std::move(e));
    int count = 0;
    if (CUresult r = cu.cuInit(0); r != CUDA_SUCCESS)
      GTEST_SKIP() << "skipping GPU test: cuInit failed (" << cu.error(r)
                   << ")";
    if (cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
      GTEST_SKIP() << "skipping GPU test: no CUDA device";
    CUdevice dev;
    ASSERT_CU(cu.cuDeviceGet(&dev, 0));
    int major = 0, minor = 0;
    ASSERT_CU(cu.cuDeviceGetAttribute(
        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    ASSERT_CU(cu.cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    arch = major * 10 + minor;
    ASSERT_CU(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
    ASSERT_CU(cu.cuCtxSetCurrent(ctx));
  }

  /// Runs every fused node of `g` on the GPU and on the CPU; returns how many.
  void checkGraph(const Graph &g, int &count);
  /// Runs the kernel of plan `p` (and its _sums kernel) on `blocks` (and
  /// `sumBlocks`) blocks, each buffer `offset` bytes into its allocation;
  /// `got` gets the results (of want's types).
  void runKernel(const codegen::KernelPlan &p, CUmodule module,
                 const std::string &symbol, const std::vector<HostTensor> &in,
                 const std::vector<HostTensor> &anchor,
                 const std::vector<HostTensor> &want, unsigned blocks,
                 unsigned sumBlocks, size_t offset,
                 const LaunchContext &launch, std::vector<HostTensor> &got);

  Driver cu;
  CUcontext ctx = nullptr;
  int arch = 0;
};

// A graph of one node `n` of `g` (fused, or the anchor matmul of a body).
Graph oneNode(const Graph &g, const Node &n) {
  Graph s;
  s.name = "one";
  llvm::SmallVector<ValueId, 8> ins;
  for (ValueId v : n.operands)
    ins.push_back(s.addInput(g.value(v).name, g.type(v)));
  llvm::SmallVector<TensorType, 4> types;
  llvm::SmallVector<std::string, 4> names;
  for (ValueId r : n.results) {
    types.push_back(g.type(r));
    names.push_back(g.value(r).name);
  }
  int32_t k = s.addNode(n.op, ins, types, n.attrs, n.scope, names);
  s.node(k).body = n.body;
  s.setOutputs(s.node(k).results);
  return s;
}

void FusedGpu::checkGraph(const Graph &g, int &count) {
  std::vector<codegen::KernelPlan> plans;
  std::vector<const Node *> nodes;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused)
      continue;
    auto plan = codegen::planKernel(*n.body);
    ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
    plans.push_back(std::move(*plan));
    nodes.push_back(&n);
  }
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cuda);
  auto cubin = codegen::compileCubin(source.text, arch);
  ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
  CUmodule module;
  ASSERT_CU(cu.cuModuleLoadData(&module, cubin->data()));
  std::mt19937 rng(11);
  LaunchContext launch;
  launch.seed = 99;
  launch.step = 5;
  for (size_t k = 0; k < plans.size(); ++k) {
    const codegen::KernelPlan &p = plans[k];
    const Node &n = *nodes[k];
    std::vector<HostTensor> in;
    for (ValueId v : n.operands)
      in.push_back(test::randomTensor(g.type(v), rng));
    std::vector<HostTensor> want = test::runOnCpu(oneNode(g, n), in, launch);
    ASSERT_EQ(want.size(), p.stores.size());

    std::vector<HostTensor> anchor;
    if (p.anchor >= 0) {
      const Node &a = p.body->node(p.anchor);
      std::vector<HostTensor> aIn;
      for (ValueId v : a.operands)
        aIn.push_back(
            in[llvm::find(p.body->inputs(), v) - p.body->inputs().begin()]);
      anchor = test::runOnCpu(oneNode(*p.body, a), aIn, launch);
      ASSERT_EQ(anchor.size(), 1u);
    }
    codegen::CudaLaunch geometry = codegen::cudaLaunchOf(p);
    std::vector<HostTensor> got, small;
    runKernel(p, module, source.symbols[k], in, anchor, want, geometry.blocks,
              geometry.sumBlocks, 0, launch, got);
    if (HasFatalFailure())
      return;
    for (size_t r = 0; r < got.size(); ++r)
      for (int64_t i = 0; i < got[r].numElements(); ++i) {
        double x = got[r].get(i), y = want[r].get(i);
        ASSERT_LE(std::abs(x - y), 1e-5 * (std::abs(y) + 1))
            << "kernel " << p.name << " result " << r << " element " << i
            << ": gpu " << x << ", cpu " << y;
      }
    // One block of each kernel, every buffer 8 bytes off its 16-byte
    // alignment (the element-by-element path): the same bits.
    runKernel(p, module, source.symbols[k], in, anchor, want, 1, 1, 8, launch,
              small);
    if (HasFatalFailure())
      return;
    for (size_t r = 0; r < got.size(); ++r)
      ASSERT_EQ(std::memcmp(got[r].raw(), small[r].raw(), got[r].bytes()), 0)
          << "kernel " << p.name << " result " << r
          << " differs on one block with unaligned buffers";
    ++count;
  }
  cu.cuModuleUnload(module);
}

void FusedGpu::runKernel(const codegen::KernelPlan &p, CUmodule module,
                         const std::string &symbol,
                         const std::vector<HostTensor> &in,
                         const std::vector<HostTensor> &anchor,
                         const std::vector<HostTensor> &want, unsigned blocks,
                         unsigned sumBlocks, size_t offset,
                         const LaunchContext &launch,
                         std::vector<HostTensor> &got) {
  // Device buffers: one per result (the anchor's in its result buffer),
  // then the loads that are operands.
  std::vector<CUdeviceptr> allocs;
  auto alloc = [&](int64_t bytes, CUdeviceptr &at) {
    CUdeviceptr base = 0;
    CUresult r = cu.cuMemAlloc(&base, std::max<int64_t>(bytes, 4) + 16);
    if (r == CUDA_SUCCESS)
      allocs.push_back(base);
    at = base + offset;
    return r;
  };
  std::vector<CUdeviceptr> outs(p.stores.size()), loads(p.loads.size());
  for (size_t r = 0; r < outs.size(); ++r)
    ASSERT_CU(alloc(want[r].bytes(), outs[r]));
  if (p.anchor >= 0)
    ASSERT_CU(cu.cuMemcpyHtoD(outs[p.anchorResult], anchor[0].raw(),
                              anchor[0].bytes()));
  for (size_t l = 0; l < p.loads.size(); ++l) {
    int32_t op = p.loads[l].operand;
    if (op < 0) {
      loads[l] = outs[p.anchorResult];
      continue;
    }
    ASSERT_CU(alloc(in[op].bytes(), loads[l]));
    ASSERT_CU(cu.cuMemcpyHtoD(loads[l], in[op].raw(), in[op].bytes()));
  }
  int64_t elems = p.numElements();
  uint64_t seed = launch.seed, step = launch.step;
  codegen::CudaLaunch geometry = codegen::cudaLaunchOf(p);
  CUdeviceptr partial = 0;
  if (geometry.partialDoubles) {
    ASSERT_CU(cu.cuMemAlloc(&partial, geometry.partialDoubles * 8));
    allocs.push_back(partial);
  }
  std::vector<void *> args;
  for (CUdeviceptr &d : loads)
    args.push_back(&d);
  for (CUdeviceptr &d : outs)
    args.push_back(&d);
  if (partial)
    args.push_back(&partial);
  args.push_back(&elems);
  args.push_back(&seed);
  args.push_back(&step);
  CUfunction fn;
  ASSERT_CU(cu.cuModuleGetFunction(&fn, module, symbol.c_str()));
  ASSERT_CU(cu.cuLaunchKernel(fn, blocks, 1, 1, geometry.threads, 1, 1, 0,
                              nullptr, args.data(), nullptr));
  if (partial) { // the chunks' column sums, added up in chunk order
    std::vector<void *> sumArgs{&partial};
    for (const codegen::KernelSum &s : p.sums)
      sumArgs.push_back(&outs[s.store]);
    CUfunction sums;
    ASSERT_CU(
        cu.cuModuleGetFunction(&sums, module, (symbol + "_sums").c_str()));
    ASSERT_CU(cu.cuLaunchKernel(sums, sumBlocks, 1, 1, geometry.sumThreads, 1,
                                1, 0, nullptr, sumArgs.data(), nullptr));
  }
  ASSERT_CU(cu.cuCtxSynchronize());
  got.clear();
  for (size_t r = 0; r < outs.size(); ++r) {
    got.emplace_back(want[r].type());
    ASSERT_CU(cu.cuMemcpyDtoH(got.back().raw(), outs[r], got.back().bytes()));
  }
  for (CUdeviceptr d : allocs)
    cu.cuMemFree(d);
}

TEST_F(FusedGpu, KernelsMatchTheCpu) {
  int count = 0;
  for (const pb::ModelSpec &spec : {test::specFromText(test::kGptBlockSpec),
                                    test::specFromText(test::kLlamaBlockSpec),
                                    test::exampleSpec("gpt_tiny")}) {
    Graph g = test::microbatchOf(spec);
    ASSERT_TRUE(fuseGraph(g));
    checkGraph(g, count);
    if (HasFatalFailure())
      return;
  }
  // Every row op (softmax ones too, which the models do not fuse).
  auto g = parseGraph(test::withDType(test::kRowOpsIR, "f32"), "row_ops");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  ASSERT_TRUE(fuseGraph(*g));
  checkGraph(*g, count);
  std::cout << "compared " << count << " fused kernels on sm_" << arch << "\n";
  EXPECT_GT(count, 0);
}

} // namespace
} // namespace strata
