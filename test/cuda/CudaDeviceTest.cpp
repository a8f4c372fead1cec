//===- CudaDeviceTest.cpp - The CUDA device in interpret mode -------------===//
//
// CudaDevice over the emulated driver: the Device interface's promises
// (stream order, events ordering another stream, copies, fill, the
// runtime's accumulate and scale kernels, host work, errors surfacing at
// synchronize), and every fused kernel codegen renders for CUDA for the
// example models (elementwise, row, column-sum kernels; dropout included)
// against the same body run by the CPU device's reference kernels.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include "codegen/KernelPlan.h"
#include "runtime/cpu/CpuDevice.h"
#include "test/codegen/RunOnCpu.h"
#include "test/codegen/TestGraphs.h"
#include "test/cuda/RunNode.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

/// The device under test: interpret mode, or with STRATA_CUDA_GPU (the
/// `gpu`-labelled cuda_gpu_test) GPU 0, null if there is none.
std::unique_ptr<CudaDevice> testDevice() {
#ifdef STRATA_CUDA_GPU
  auto driver = cuda::openRealDriver(0);
  if (!driver) {
    llvm::consumeError(driver.takeError());
    return nullptr;
  }
  auto d = CudaDevice::create(std::move(*driver));
#else
  auto d = CudaDevice::create(cuda::makeInterpretDriver());
#endif
  EXPECT_TRUE(bool(d)) << llvm::toString(d.takeError());
  return d ? std::move(*d) : nullptr;
}

#ifdef STRATA_CUDA_GPU
#define REQUIRE_DEVICE(d)                                                      \
  if (!(d))                                                                    \
  GTEST_SKIP() << "no GPU (libcuda.so.1 or a device is missing)"
#else
#define REQUIRE_DEVICE(d) ASSERT_TRUE(d)
#endif

template <typename T>
std::vector<T> toHost(Device &d, const void *p, size_t n) {
  std::vector<T> host(n);
  d.copyToHost(host.data(), p, int64_t(n * sizeof(T)));
  EXPECT_FALSE(bool(d.synchronize()));
  return host;
}

TEST(CudaDeviceApi, StreamsEventsCopiesAndRuntimeKernels) {
  auto d = testDevice();
  REQUIRE_DEVICE(d);
  EXPECT_EQ(d->name(), d->driver().kind().str() + ":0");
  EXPECT_FALSE(d->isHostMemory());
  const int n = 1000;
  std::vector<float> a(n);
  for (int i = 0; i < n; ++i)
    a[i] = float(i) * 0.25f - 3.0f;
  void *da = d->allocate(n * 4), *dc = d->allocate(n * 4);
  d->copyFromHost(da, a.data(), n * 4);
  d->scale(da, n, 0.5f); // a *= 0.5
  // Stream 1 copies a once stream 0's work (behind a slow host task) is
  // done: the event orders it.
  StreamId copies = d->createStream();
  auto done = d->createEvent();
  std::atomic<bool> slowDone{false};
  d->enqueueHost([&] {
    std::this_thread::sleep_for(30ms);
    slowDone = true;
    return llvm::Error::success();
  });
  d->record(*done, kDefaultStream);
  d->wait(copies, *done);
  d->copy(dc, da, n * 4, copies);
  d->enqueueHost(
      [&] {
        EXPECT_TRUE(slowDone.load());
        return llvm::Error::success();
      },
      copies);
  ASSERT_FALSE(bool(d->synchronize())); // the copy is on stream 1
  std::vector<float> got = toHost<float>(*d, dc, n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(got[i], a[i] * 0.5f) << i;
  d->fill(dc, 8, 0);
  EXPECT_EQ(toHost<float>(*d, dc, 2), (std::vector<float>{0, 0}));
  for (void *p : {da, dc})
    d->deallocate(p);
}

// The trainer's per-step scalars go through page-locked staging: the copy
// takes the value the host buffer had when it was enqueued, even though
// the stream reaches it later (after the host buffer changed).
TEST(CudaDeviceApi, SmallHostCopiesTakeTheValueAtEnqueue) {
  auto d = testDevice();
  REQUIRE_DEVICE(d);
  void *dev = d->allocate(4);
  std::atomic<bool> release{false};
  d->enqueueHost([&] {
    while (!release.load())
      std::this_thread::sleep_for(1ms);
    return llvm::Error::success();
  });
  float lr = 0.25f;
  d->copyFromHost(dev, &lr, 4);
  lr = 7.0f; // the next step's value, before the stream ran the copy
  release = true;
  EXPECT_EQ(toHost<float>(*d, dev, 1), (std::vector<float>{0.25f}));
  d->deallocate(dev);
}

TEST(CudaDeviceApi, AFailedHostTaskIsReportedAtSynchronize) {
  auto d = testDevice();
  REQUIRE_DEVICE(d);
  d->enqueueHost([] {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "boom");
  });
  llvm::Error e = d->synchronize();
  ASSERT_TRUE(bool(e));
  EXPECT_EQ(llvm::toString(std::move(e)), "boom");
  EXPECT_FALSE(bool(d->synchronize())); // reported once
}

struct ModelCase {
  const char *name;
  pb::ModelSpec (*spec)();
};

class CudaFused : public testing::TestWithParam<ModelCase> {};

// Every fused kernel (with its matmul on the driver's GEMM) against its
// body on the CPU reference kernels. 1e-5 relative: the
// kernels and the reference round the same f32 operations in different
// orders (row sums in f64 on both) and use different exp/log/tanh
// implementations (each within a few ulp).
TEST_P(CudaFused, EveryKernelMatchesItsBodyOnTheCpu) {
  Graph g = test::microbatchOf(GetParam().spec());
  ASSERT_TRUE(fuseGraph(g));
  auto d = testDevice();
  REQUIRE_DEVICE(d);
  auto module = d->prepare(g);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  std::mt19937 rng(42);
  LaunchContext ctx;
  ctx.seed = 1234;
  ctx.step = 7;
  int checked = 0;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused || !d->supports(g, n))
      continue;
    ++checked;
    std::vector<HostTensor> inputs;
    for (ValueId v : n.operands)
      inputs.push_back(test::randomTensor(g.type(v), rng));
    std::vector<HostTensor> got =
        test::runNode(*d, module->get(), g, n, inputs, ctx);
    std::vector<HostTensor> want = test::runOnCpu(*n.body, inputs, ctx);
    ASSERT_EQ(got.size(), want.size()) << n.scope;
    bool gemm = codegen::planKernel(*n.body)->anchor >= 0;
    for (size_t r = 0; r < got.size(); ++r) {
      // After a GEMM the rounding of a K-long dot product differs between
      // OpenBLAS and the CPU's kernels: bound it by the result's largest
      // value (as FusedCpuTest's loss check does), else element by element.
      double scale = 1;
      for (int64_t i = 0; gemm && i < want[r].numElements(); ++i)
        scale = std::max(scale, std::abs(want[r].get(i)));
      for (int64_t i = 0; i < got[r].numElements(); ++i) {
        double w = want[r].get(i), x = got[r].get(i);
        ASSERT_LE(std::abs(x - w),
                  1e-5 * (gemm ? scale : std::max(1.0, std::abs(w))))
            << "kernel " << n.attrs.getString("kernel") << " (" << n.scope
            << ") result " << r << " element " << i << ": cuda-interpret " << x
            << ", cpu " << w;
      }
    }
  }
  EXPECT_GT(checked, 3);
}

INSTANTIATE_TEST_SUITE_P(
    Models, CudaFused,
    testing::Values(
        ModelCase{"gpt_tiny", [] { return test::exampleSpec("gpt_tiny"); }},
        ModelCase{"llama_tiny", [] { return test::exampleSpec("llama_tiny"); }},
        ModelCase{"gpt_block_dropout",
                  [] { return test::specFromText(test::kGptBlockSpec); }}),
    [](const auto &info) { return std::string(info.param.name); });

#ifndef STRATA_CUDA_GPU
TEST(CudaReal, WithoutADriverTheErrorSaysWhatIsMissing) {
  auto d = cuda::openRealDriver(0);
  if (d)
    GTEST_SKIP() << "a CUDA driver and device are present (label gpu tests "
                    "cover them)";
  std::string e = llvm::toString(d.takeError());
  EXPECT_TRUE(e.find("libcuda.so.1") != std::string::npos ||
              e.find("cuInit") != std::string::npos)
      << e;
}
#endif

} // namespace
} // namespace strata
