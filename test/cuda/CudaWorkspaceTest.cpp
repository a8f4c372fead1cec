//===- CudaWorkspaceTest.cpp - The CUDA device's own memory ---------------===//
//
// Beyond a plan's buffers a CUDA device takes memory of its own: the
// cuBLASLt workspace, the hand-written kernels' scratch, the f32 copies a
// 16-bit node runs on, the column-sum partials of generated kernels.
// workspaceBytes says how much before anything is allocated (the trainer's
// memory check adds it to the plan's peak); here the emulated driver's
// accounting of what a run really allocated is the reference.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include "ir/Builder.h"
#include "runtime/Executable.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

// A graph with each kind: a bf16 cross-entropy (f32 copies of the logits,
// the f32 launcher's loss per row), a sum of two 70000-long rows (the
// two-pass reduction's partials) and a matmul (the GEMM workspace).
TEST(CudaWorkspace, ARunTakesWhatWorkspaceBytesSaidBeforehand) {
  Graph g;
  ValueId logits = g.addInput("logits", {DType::BF16, {64, 512}});
  ValueId labels = g.addInput("labels", {DType::I32, {64}});
  ValueId x = g.addInput("x", {DType::F32, {2, 70000}});
  ValueId a = g.addInput("a", {DType::F32, {16, 16}});
  Builder b(g);
  g.addOutput(b.create1(OpKind::CrossEntropy, {logits, labels}));
  g.addOutput(b.reduceSum(x, {1}));
  g.addOutput(b.matmul(a, a));

  auto dev = CudaDevice::create(cuda::makeInterpretDriver(int64_t(1) << 30));
  ASSERT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  CudaDevice &d = **dev;
  const int64_t want = d.workspaceBytes({&g});
  // The logits' f32 copy alone is 128 KiB: the count is not just the
  // GEMM workspace.
  EXPECT_GE(want - cuda::kGemmWorkspaceBytes, 64 * 512 * 4);

  const int64_t free0 = *d.freeBytes();
  auto exe = Executable::create(g, d);
  ASSERT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  std::vector<HostTensor> inputs;
  for (ValueId v : g.inputs())
    inputs.emplace_back(g.type(v));
  for (int64_t i = 0; i < 64; ++i)
    inputs[1].data<int32_t>()[i] = int32_t(i * 7 % 512);
  auto out = (*exe)->runHost(inputs);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  // runHost frees its inputs and outputs: what stays is the executable's
  // arena and the device's own memory. The emulated driver pads each
  // allocation to 256 bytes (4 allocations here).
  int64_t arena = ((*exe)->arenaBytes() + 255) / 256 * 256;
  int64_t used = free0 - *d.freeBytes() - arena;
  EXPECT_GE(used, want);
  EXPECT_LE(used, want + 4 * 256);
}

} // namespace
} // namespace strata
