//===- FusedGpuTest.cpp - Fused CUDA kernels against the CPU, on a driver -===//
//
// Built twice. fused_interpret_test (label codegen) runs on the interpret
// driver (runtime/cuda/interpret: the kernels' CUDA C compiled by the host
// compiler, device memory poisoned and fenced), so it runs here;
// fused_gpu_test (STRATA_FUSED_ON_GPU, label gpu) runs on the real driver
// and skips with a message without a driver, a device or NVRTC.
//
// Every fused kernel of the GPT and Llama blocks (with dropout), of gpt_tiny
// and of every row op (f32 and f64, rows of 40; f32 rows of 42, which are not
// read 4 at a time) is compiled for the driver, run on random inputs, and
// compared with the CPU device running the same nodes. Anchored kernels
// get the anchor's matmul result computed on the CPU and uploaded into the
// result buffer that holds it (the in-place convention of
// codegen/KernelPlan.h), which the kernel also reads as load 0; the CPU
// then runs the rest of the body from that same result (a GEMM of another
// blocking would round differently, and a bias gradient sums those
// differences over every row).
//
// Each kernel runs three times, and all three must give the same bits:
// with its CudaLaunch geometry; on one block with every buffer 8 bytes off
// its 16-byte alignment (the element-by-element path); on 3 blocks. So the
// result depends neither on the grid nor on the alignment, and a kernel
// that leaves an element out is caught by the poison (NaN) left there.
//
// Tolerance: as FusedCpuTest, |gpu - cpu| <= 1e-5 * (|cpu| + 1): CUDA's
// tanhf/expf/erff are within 2 ulp of glibc's, nvcc contracts to FMA like
// the host compiler, and sums are f64 on both sides in different orders;
// dropout masks are integer compares and match.
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "codegen/NvrtcCompiler.h"
#include "codegen/Renderer.h"
#include "ir/IRText.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/interpret/InterpretDriver.h"
#include "test/codegen/RunOnCpu.h"
#include "llvm/ADT/DenseMap.h"

#include <cmath>
#include <cstring>
#include <iostream>

namespace strata {
namespace {

#define ASSERT_OK(call)                                                        \
  do {                                                                         \
    if (llvm::Error e_ = (call))                                               \
      FAIL() << #call << ": " << toString(std::move(e_));                      \
  } while (0)

class Fused : public testing::Test {
protected:
  void SetUp() override {
#ifdef STRATA_FUSED_ON_GPU
    if (auto e = codegen::nvrtcAvailable())
      GTEST_SKIP() << "skipping GPU test: " << toString(std::move(e));
    auto d = cuda::openRealDriver(0);
    if (!d)
      GTEST_SKIP() << "skipping GPU test: " << toString(d.takeError());
    driver = std::move(*d);
#else
    driver = cuda::makeInterpretDriver();
#endif
    auto s = driver->createStream();
    ASSERT_TRUE(bool(s)) << toString(s.takeError());
    stream = *s;
  }
  void TearDown() override {
    if (driver && stream)
      llvm::consumeError(driver->destroyStream(stream));
  }

  /// Runs every fused node of `g` on the driver and on the CPU.
  void checkGraph(const Graph &g, int &count);
  /// Runs the kernel of plan `p` (and its _sums kernel) on `blocks` blocks,
  /// each buffer `offset` bytes into its allocation; `got` gets the
  /// results (of want's types).
  void runKernel(const codegen::KernelPlan &p, cuda::Module &module,
                 const std::string &symbol, const std::vector<HostTensor> &in,
                 const std::vector<HostTensor> &anchor,
                 const std::vector<HostTensor> &want, unsigned blocks,
                 size_t offset, const LaunchContext &launch,
                 std::vector<HostTensor> &got);

  std::unique_ptr<cuda::Driver> driver;
  cuda::StreamHandle stream = nullptr;
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

// The body of an anchored kernel after its matmul: the anchor's result an
// input (the last), so the CPU computes the loop from the very values the
// kernel reads. Outputs that are the anchor's result are left out.
Graph loopAfterAnchor(const Graph &body, const codegen::KernelPlan &p) {
  Graph s;
  s.name = "loop";
  llvm::DenseMap<ValueId, ValueId> map;
  for (ValueId v : body.inputs())
    map[v] = s.addInput(body.value(v).name, body.type(v));
  ValueId a = body.node(p.anchor).results[0];
  map[a] = s.addInput(body.value(a).name, body.type(a));
  for (size_t n = p.anchor + 1; n < body.nodes().size(); ++n) {
    const Node &node = body.node(n);
    llvm::SmallVector<ValueId, 4> ins;
    for (ValueId v : node.operands)
      ins.push_back(map.lookup(v));
    llvm::SmallVector<TensorType, 4> types;
    llvm::SmallVector<std::string, 4> names;
    for (ValueId r : node.results) {
      types.push_back(body.type(r));
      names.push_back(body.value(r).name);
    }
    int32_t k = s.addNode(node.op, ins, types, node.attrs, node.scope, names);
    for (size_t r = 0; r < node.results.size(); ++r)
      map[node.results[r]] = s.node(k).results[r];
  }
  llvm::SmallVector<ValueId, 4> outs;
  for (ValueId v : body.outputs())
    if (v != a)
      outs.push_back(map.lookup(v));
  s.setOutputs(outs);
  return s;
}

void Fused::runKernel(const codegen::KernelPlan &p, cuda::Module &module,
                      const std::string &symbol,
                      const std::vector<HostTensor> &in,
                      const std::vector<HostTensor> &anchor,
                      const std::vector<HostTensor> &want, unsigned blocks,
                      size_t offset, const LaunchContext &launch,
                      std::vector<HostTensor> &got) {
  cuda::Driver &d = *driver;
  std::vector<cuda::DevicePtr> allocs;
  auto alloc = [&](int64_t bytes, cuda::DevicePtr &at) -> llvm::Error {
    auto base = d.allocate(std::max<int64_t>(bytes, 4) + 16);
    if (!base)
      return base.takeError();
    allocs.push_back(*base);
    at = *base + offset;
    return llvm::Error::success();
  };
  // Device buffers: one per result (the anchor's in its result buffer),
  // then the loads that are operands.
  std::vector<cuda::DevicePtr> outs(p.stores.size()), loads(p.loads.size());
  for (size_t r = 0; r < outs.size(); ++r)
    ASSERT_OK(alloc(want[r].bytes(), outs[r]));
  if (p.anchor >= 0)
    ASSERT_OK(d.copyToDevice(outs[p.anchorResult], anchor[0].raw(),
                             anchor[0].bytes(), stream));
  for (size_t l = 0; l < p.loads.size(); ++l) {
    int32_t op = p.loads[l].operand;
    if (op < 0) {
      loads[l] = outs[p.anchorResult];
      continue;
    }
    ASSERT_OK(alloc(in[op].bytes(), loads[l]));
    ASSERT_OK(d.copyToDevice(loads[l], in[op].raw(), in[op].bytes(), stream));
  }
  int64_t elems = p.numElements();
  uint64_t seed = launch.seed, step = launch.step;
  codegen::CudaLaunch geometry = codegen::cudaLaunchOf(p);
  cuda::DevicePtr partial = 0;
  if (geometry.partialDoubles) {
    auto w = d.allocate(geometry.partialDoubles * 8);
    ASSERT_TRUE(bool(w)) << toString(w.takeError());
    partial = *w;
    allocs.push_back(partial);
  }
  std::vector<void *> args;
  for (cuda::DevicePtr &ptr : loads)
    args.push_back(&ptr);
  for (cuda::DevicePtr &ptr : outs)
    args.push_back(&ptr);
  if (partial)
    args.push_back(&partial);
  args.push_back(&elems);
  args.push_back(&seed);
  args.push_back(&step);
  auto fn = d.function(module, symbol);
  ASSERT_TRUE(bool(fn)) << toString(fn.takeError());
  ASSERT_OK(d.launch(*fn, {blocks, 1, 1}, {geometry.threads, 1, 1}, 0, stream,
                     args.data()));
  if (partial) { // the chunks' column sums, added up in chunk order
    std::vector<void *> sumArgs{&partial};
    for (const codegen::KernelSum &s : p.sums)
      sumArgs.push_back(&outs[s.store]);
    auto sums = d.function(module, symbol + "_sums");
    ASSERT_TRUE(bool(sums)) << toString(sums.takeError());
    ASSERT_OK(d.launch(*sums, {blocks, 1, 1}, {geometry.sumThreads, 1, 1}, 0,
                       stream, sumArgs.data()));
  }
  got.clear();
  for (size_t r = 0; r < outs.size(); ++r) {
    got.emplace_back(want[r].type());
    ASSERT_OK(
        d.copyToHost(got.back().raw(), outs[r], got.back().bytes(), stream));
  }
  ASSERT_OK(d.synchronize(stream));
  for (cuda::DevicePtr ptr : allocs)
    ASSERT_OK(d.free(ptr));
}

void Fused::checkGraph(const Graph &g, int &count) {
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
  auto module = driver->loadModule(source.text, "@" + g.name + " kernels");
  ASSERT_TRUE(bool(module)) << toString(module.takeError());
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
    std::vector<HostTensor> want, anchor;
    if (p.anchor < 0) {
      want = test::runOnCpu(oneNode(g, n), in, launch);
    } else {
      const Node &a = p.body->node(p.anchor);
      std::vector<HostTensor> aIn;
      for (ValueId v : a.operands)
        aIn.push_back(
            in[llvm::find(p.body->inputs(), v) - p.body->inputs().begin()]);
      anchor = test::runOnCpu(oneNode(*p.body, a), aIn, launch);
      ASSERT_EQ(anchor.size(), 1u);
      std::vector<HostTensor> loopIn = in;
      loopIn.push_back(anchor[0]);
      std::vector<HostTensor> loop =
          test::runOnCpu(loopAfterAnchor(*p.body, p), loopIn, launch);
      ValueId av = p.body->node(p.anchor).results[0];
      for (size_t r = 0, k = 0; r < p.body->outputs().size(); ++r)
        want.push_back(p.body->outputs()[r] == av ? anchor[0]
                                                  : std::move(loop[k++]));
    }
    ASSERT_EQ(want.size(), p.stores.size());
    codegen::CudaLaunch geometry = codegen::cudaLaunchOf(p);
    std::vector<HostTensor> got;
    runKernel(p, **module, source.symbols[k], in, anchor, want, geometry.blocks,
              0, launch, got);
    if (HasFatalFailure())
      return;
    for (size_t r = 0; r < got.size(); ++r) {
      // A column sum of a value the kernel also stores: against the sum of
      // the stored elements (f32 values added in f64), bounded by the f32
      // rounding of the result. The CPU's sum would differ by the sum of the
      // elements' few-ulp differences, which cancellation leaves large next
      // to the sum itself.
      const codegen::KernelSum *sum = p.sumOf(r);
      auto stored = sum ? llvm::find(p.stores, sum->value) : p.stores.end();
      if (sum && !sum->byRowOp && stored != p.stores.end()) {
        const HostTensor &x = got[stored - p.stores.begin()];
        int64_t C = got[r].numElements(), rows = x.numElements() / C;
        for (int64_t c = 0; c < C; ++c) {
          double ref = 0;
          for (int64_t row = 0; row < rows; ++row)
            ref += x.get(row * C + c);
          ASSERT_LE(std::abs(got[r].get(c) - ref), 1e-6 * (std::abs(ref) + 1))
              << "kernel " << p.name << " (" << n.scope << ") column sum " << r
              << " column " << c << ": " << got[r].get(c)
              << ", the stored elements add up to " << ref;
        }
        continue;
      }
      for (int64_t i = 0; i < got[r].numElements(); ++i) {
        double x = got[r].get(i), y = want[r].get(i);
        ASSERT_LE(std::abs(x - y), 1e-5 * (std::abs(y) + 1))
            << "kernel " << p.name << " (" << n.scope << ", anchor " << p.anchor
            << ", sum " << (p.sumOf(r) != nullptr) << ") result " << r
            << " element " << i << ": " << driver->kind().str() << " " << x
            << ", cpu " << y;
      }
    }
    struct Variant {
      unsigned blocks;
      size_t offset;
      const char *what;
    };
    for (Variant v : {Variant{1, 8, "one block, buffers off alignment"},
                      Variant{3, 0, "3 blocks"}}) {
      std::vector<HostTensor> other;
      runKernel(p, **module, source.symbols[k], in, anchor, want, v.blocks,
                v.offset, launch, other);
      if (HasFatalFailure())
        return;
      for (size_t r = 0; r < got.size(); ++r)
        ASSERT_EQ(std::memcmp(got[r].raw(), other[r].raw(), got[r].bytes()), 0)
            << "kernel " << p.name << " result " << r << " differs on "
            << v.what;
    }
    ++count;
  }
}

TEST_F(Fused, KernelsMatchTheCpuOnAnyGridAndAlignment) {
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
  for (auto [dtype, row] : {std::pair{"f32", "40"}, std::pair{"f64", "40"},
                            std::pair{"f32", "42"}}) {
    std::string text = test::withDType(test::kRowOpsIR, dtype);
    for (size_t at; row != llvm::StringRef("40") &&
                    (at = text.find("40]")) != std::string::npos;)
      text.replace(at, 2, row); // rows of 40 -> rows of `row`
    auto g = parseGraph(text, "row_ops");
    ASSERT_TRUE(bool(g)) << toString(g.takeError());
    ASSERT_TRUE(fuseGraph(*g));
    checkGraph(*g, count);
    if (HasFatalFailure())
      return;
  }
  std::cout << "compared " << count << " fused kernels on "
            << driver->kind().str() << " (" << driver->info().name << ")\n";
  EXPECT_GT(count, 0);
}

} // namespace
} // namespace strata
