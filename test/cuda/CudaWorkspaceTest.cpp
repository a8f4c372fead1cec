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
#include "ir/IRText.h"
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

// The NCCL communicators' buffers (nccl/NcclCommunicator.h): a staging copy
// of every send run in the step, and per group and size the most packing
// buffers one collective takes, reused in stream order by the others.
TEST(CudaWorkspace, CommunicatorBuffersAreCountedPerSendAndPerPackingSize) {
  auto g = parseGraph(R"(
graph @comm mesh<pp=2,tp=2> partitioned(%x: f32[2,4,8], %y: f32[2,8,8], %h: f32[64,32]) {
  %g1 = all_gather(%x) {axes=["tp"], dim=1} : f32[2,8,8]
  %g2 = all_gather(%x) {axes=["tp"], dim=1} : f32[2,8,8]
  %rs = reduce_scatter(%y) {axes=["tp"], dim=1} : f32[2,4,8]
  %a = all_to_all(%y) {axes=["tp"], split_dim=1, concat_dim=2} : f32[2,4,16]
  %g0 = all_gather(%x) {axes=["tp"], dim=0} : f32[4,4,8]
  send(%h) {axes=["pp"], peer=1, tag=0}
  return %g1, %g2, %rs, %a, %g0
}
)",
                      "comm.ir");
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  auto dev = CudaDevice::create(cuda::makeInterpretDriver(int64_t(1) << 30));
  ASSERT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  CudaDevice &d = **dev;
  EXPECT_EQ(d.workspaceBytes({}), cuda::kGemmWorkspaceBytes);
  // The gathers along dim 1 and the reduce-scatter pack through one
  // 512-byte buffer each ([2,8,8] f32), the all-to-all through two of 512:
  // [tp] needs two 512-byte buffers. The gather along dim 0 packs nothing.
  // The send stages its 8 KiB operand once per run.
  const int64_t send = 64 * 32 * 4, packing = 2 * 512;
  EXPECT_EQ(d.workspaceBytes({&*g}) - cuda::kGemmWorkspaceBytes,
            send + packing);
  EXPECT_EQ(d.workspaceBytes({&*g, &*g}) - d.workspaceBytes({&*g}), send);
}

} // namespace
} // namespace strata
