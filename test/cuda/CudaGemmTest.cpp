//===- CudaGemmTest.cpp - cuBLASLt epilogues, beta = 1, 16-bit GEMMs ------===//
//
// What the CUDA device asks cuBLASLt for (read through a recording driver)
// and what interpret mode computes for it, against the CPU device running
// the same programs node by node:
//  - fused matmul bodies of the fusion pass's forms run as one GEMM with
//    the BIAS, GELU_AUX_BIAS, DGELU and DGELU_BGRAD epilogues; a GELU body
//    whose aux matrix cuBLASLt cannot take (N % 8 != 0) keeps its generated
//    epilogue;
//  - a matmul with an accumulator operand (grad-accumulation-fusion, the B
//    programs' gradient accumulation) is one GEMM with beta = 1 into
//    the sum (a copy of the accumulator first), beta = 0 without one;
//  - bf16 programs: matmuls with bf16 inputs (f32 compute) and every other
//    op on f32 copies rounded once, as the CPU device does.
// Tolerances: f32 1e-5 relative to max(1, |x|) (the GEMMs add in other
// orders; epilogue sums are f64 here, f32 on the CPU); bf16 one unit in the
// last place, 2^-8 relative (both round the same f32 values once, and
// their f32 values differ by a few f32 ulps).
//
//===----------------------------------------------------------------------===//
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/interpret/InterpretDriver.h"

#include "codegen/NvrtcCompiler.h"
#include "ir/IRText.h"
#include "runtime/kernels/Float16.h"
#include "test/codegen/TestGraphs.h"
#include "test/cuda/RecordingDriver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace strata {
namespace {

struct Outcome {
  std::vector<HostTensor> cpu, cuda;
  std::vector<cuda::Gemm> gemms;
  std::vector<std::string> launches;
};

/// Runs `ir` on the CPU device and on cuda-interpret (recorded) with the
/// same random inputs.
Outcome runBoth(const std::string &ir) {
  Outcome run;
  auto g = parseGraph(ir);
  EXPECT_TRUE(bool(g)) << llvm::toString(g.takeError());
  if (!g)
    return run;
  std::mt19937 rng(11);
  std::vector<HostTensor> in;
  for (ValueId v : g->inputs()) { // 16-bit ones: f32 values rounded once
    TensorType t = g->type(v), wide = t;
    wide.dtype = DType::F32;
    HostTensor f = test::randomTensor(wide, rng, -1.0, 1.0);
    if (t.dtype != DType::BF16) {
      in.push_back(std::move(f));
      continue;
    }
    HostTensor h(t);
    kernels::floatToBf16(f.data<float>(), static_cast<uint16_t *>(h.raw()),
                         f.numElements());
    in.push_back(std::move(h));
  }
  CpuDevice cpu;
  auto cpuExe = Executable::create(*g, cpu);
  EXPECT_TRUE(bool(cpuExe)) << llvm::toString(cpuExe.takeError());
  if (!cpuExe)
    return run;
  auto want = (*cpuExe)->runHost(in, {});
  EXPECT_TRUE(bool(want)) << llvm::toString(want.takeError());
  auto driver =
      std::make_unique<test::RecordingDriver>(cuda::makeInterpretDriver());
  test::RecordingDriver *rec = driver.get();
  auto dev = CudaDevice::create(std::move(driver));
  EXPECT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  if (!dev || !want)
    return run;
  auto exe = Executable::create(*g, **dev);
  EXPECT_TRUE(bool(exe)) << llvm::toString(exe.takeError());
  if (!exe)
    return run;
  auto got = (*exe)->runHost(in, {});
  EXPECT_TRUE(bool(got)) << llvm::toString(got.takeError());
  if (!got)
    return run;
  run.cpu = std::move(*want);
  run.cuda = std::move(*got);
  run.gemms = rec->gemms;
  run.launches = rec->launches;
  return run;
}

/// Element k of `t` as a double (bf16 included).
double valueAt(const HostTensor &t, int64_t k) {
  if (t.dtype() == DType::BF16)
    return kernels::bf16ToFloat(static_cast<const uint16_t *>(t.raw())[k]);
  return t.get(k);
}

void expectClose(const Outcome &run, double tol) {
  ASSERT_EQ(run.cuda.size(), run.cpu.size());
  ASSERT_FALSE(run.cpu.empty());
  for (size_t i = 0; i < run.cpu.size(); ++i) {
    ASSERT_EQ(run.cuda[i].type(), run.cpu[i].type()) << "output " << i;
    double worst = 0;
    int64_t at = 0;
    for (int64_t k = 0; k < run.cpu[i].numElements(); ++k) {
      double want = valueAt(run.cpu[i], k), got = valueAt(run.cuda[i], k);
      double d = std::abs(got - want) / std::max(1.0, std::abs(want));
      if (!(d <= worst)) { // NaN counts as worst
        worst = d;
        at = k;
      }
    }
    EXPECT_LE(worst, tol) << "output " << i << " element " << at << ": cuda "
                          << valueAt(run.cuda[i], at) << ", cpu "
                          << valueAt(run.cpu[i], at);
  }
}

TEST(CudaGemm, FusedMatmulBodiesRunAsCublasLtEpilogues) {
  Outcome run = runBoth(
      R"(graph @epilogues(%x: f32[4,8,16], %w: f32[16,24], %b: f32[24], %dy: f32[4,8,32], %w2: f32[24,32], %w3: f32[16,12], %b3: f32[12]) {
  %y = fused(%x, %w, %b) {kernel="bias"} : f32[4,8,24] {
    %m0 = matmul(%x, %w) : f32[4,8,24]
    %y = add(%m0, %b) : f32[4,8,24]
    return %y
  }
  %h, %g = fused(%x, %w, %b) {kernel="gelu"} : f32[4,8,24], f32[4,8,24] {
    %m1 = matmul(%x, %w) : f32[4,8,24]
    %h = add(%b, %m1) : f32[4,8,24]
    %g = gelu(%h) {approx="tanh"} : f32[4,8,24]
    return %h, %g
  }
  %dh = fused(%dy, %w2, %h) {kernel="dgelu"} : f32[4,8,24] {
    %m2 = matmul(%dy, %w2) {transpose_b=true} : f32[4,8,24]
    %dh = gelu_grad(%m2, %h) {approx="tanh"} : f32[4,8,24]
    return %dh
  }
  %db, %dh2 = fused(%dy, %w2, %h) {kernel="dgelu_bgrad"} : f32[24], f32[4,8,24] {
    %m3 = matmul(%dy, %w2) {transpose_b=true} : f32[4,8,24]
    %dh2 = gelu_grad(%m3, %h) {approx="tanh"} : f32[4,8,24]
    %db = reduce_sum(%dh2) {axes=[0, 1]} : f32[24]
    return %db, %dh2
  }
  %h3, %g3 = fused(%x, %w3, %b3) {kernel="gelu_odd"} : f32[4,8,12], f32[4,8,12] {
    %m4 = matmul(%x, %w3) : f32[4,8,12]
    %h3 = add(%m4, %b3) : f32[4,8,12]
    %g3 = gelu(%h3) {approx="tanh"} : f32[4,8,12]
    return %h3, %g3
  }
  return %y, %h, %g, %dh, %db, %dh2, %h3, %g3
}
)");
  expectClose(run, 1e-5);
  ASSERT_EQ(run.gemms.size(), 5u);
  cuda::Epilogue want[] = {cuda::Epilogue::Bias, cuda::Epilogue::GeluAuxBias,
                           cuda::Epilogue::DGelu, cuda::Epilogue::DGeluBGrad,
                           cuda::Epilogue::None};
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(run.gemms[i].epilogue, want[i]) << "gemm " << i;
  // One GEMM over the 32 rows, so the bias gradient sums them all.
  EXPECT_EQ(run.gemms[3].batch, 1);
  EXPECT_EQ(run.gemms[3].n, 32);
  // Only the body cuBLASLt cannot take launches its generated kernel.
  EXPECT_EQ(llvm::count_if(run.launches,
                           [](const std::string &k) {
                             return llvm::StringRef(k).startswith("gelu_odd");
                           }),
            1);
  EXPECT_EQ(run.launches.size(), 1u);
}

TEST(CudaGemm, AMatmulWithAnAccumulatorIsOneGemmWithBetaOne) {
  Outcome run =
      runBoth(R"(graph @acc(%a: f32[32,16], %d: f32[32,24], %acc: f32[16,24]) {
  %sum = matmul(%a, %d, %acc) {transpose_a=true} : f32[16,24]
  %q = matmul(%a, %d) {transpose_a=true} : f32[16,24]
  return %sum, %q
}
)");
  expectClose(run, 1e-5);
  ASSERT_EQ(run.gemms.size(), 2u);
  EXPECT_EQ(run.gemms[0].beta, 1.0); // into %sum, which starts as %acc
  EXPECT_EQ(run.gemms[1].beta, 0.0);
}

const char *const kBf16Program =
    R"(graph @half(%a: bf16[8,32], %b: bf16[32,16], %x: bf16[8,16], %ln.w: f32[16], %ln.b: f32[16]) {
  %m = matmul(%a, %b) : bf16[8,16]
  %s = add(%m, %x) : bf16[8,16]
  %g = gelu(%s) {approx="tanh"} : bf16[8,16]
  %t = transpose(%g) {perm=[1, 0]} : bf16[16,8]
  %c = cast(%t) {dtype="f32"} : f32[16,8]
  %n = cast(%c) {dtype="bf16"} : bf16[16,8]
  %wb = cast(%ln.w) {dtype="bf16"} : bf16[16]
  %bb = cast(%ln.b) {dtype="bf16"} : bf16[16]
  %l = layer_norm(%g, %wb, %bb) {eps=1e-05} : bf16[8,16]
  %r = reduce_sum(%l) {axes=[1]} : bf16[8]
  return %m, %g, %t, %c, %n, %l, %r
}
)";

TEST(CudaGemm, Bf16ProgramsMatchTheCpuWithinOneBf16Ulp) {
  Outcome run = runBoth(kBf16Program);
  expectClose(run, std::ldexp(1.0, -8));
  ASSERT_EQ(run.gemms.size(), 1u);
  EXPECT_EQ(run.gemms[0].ab, DType::BF16);
  EXPECT_EQ(run.gemms[0].c, DType::BF16);
  // Elementwise ops read and write the 16-bit buffers themselves (add,
  // gelu and the casts widen nothing); the
  // others widen each 16-bit operand once: transpose 1, layer_norm 3,
  // reduce_sum 1.
  int widened = 0;
  for (const std::string &k : run.launches)
    widened += llvm::StringRef(k).startswith("strata_widen_bf16");
  EXPECT_EQ(widened, 5);
}

// The kernels the device generates for a bf16 program (with the prelude's
// 16-bit conversions) compile with NVRTC for sm_90 without spills or local
// memory (ptxas's report); skipped only where libnvrtc cannot be loaded.
TEST(CudaGemm, Bf16KernelsPassThePtxasCheck) {
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << llvm::toString(std::move(e));
  auto g = parseGraph(kBf16Program);
  ASSERT_TRUE(bool(g)) << llvm::toString(g.takeError());
  auto dev = CudaDevice::create(cuda::makeInterpretDriver());
  ASSERT_TRUE(bool(dev)) << llvm::toString(dev.takeError());
  auto module = (*dev)->prepare(*g);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  std::string source = CudaDevice::kernelSource(module->get());
  auto out = codegen::compileCubinWithLog(source, 90, {"--ptxas-options=-v"},
                                          "bf16_kernels.cu");
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  auto report = codegen::parsePtxasReport(out->log);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  ASSERT_FALSE(report->empty());
  for (const codegen::KernelResources &k : *report) {
    EXPECT_EQ(k.spillStores + k.spillLoads, 0) << k.name;
    EXPECT_EQ(k.stackFrame, 0) << k.name;
  }
}

} // namespace
} // namespace strata
