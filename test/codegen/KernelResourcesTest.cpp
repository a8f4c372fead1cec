//===- KernelResourcesTest.cpp - No generated CUDA kernel spills ----------===//
//
// No GPU needed. For gpt2_124m, gpt2_1.5b and llama2_7b, the programs
// `strata compile` makes (compilePipeline with fusion, one stage) are
// rendered into the CUDA kernel library a plan carries, compiled by NVRTC to
// an sm_90 cubin with ptxas's resource report (--ptxas-options=-v), and the
// report is read kernel by kernel: every kernel of the library (and each
// column-sum kernel's SYMBOL_sums) is there, none spills or has a stack
// frame (local memory), and each fits its __launch_bounds__ (registers x
// threads within the 64K registers of an SM). The table of registers is
// printed for the record. Every row op at the longest fused row
// (kMaxFusedRow) in f32 and f64 passes the same check, and the gpt2_124m
// library also compiles with nvcc -cubin (when the toolkit has nvcc). The
// NVRTC tests skip, saying why, only where libnvrtc cannot be loaded.
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "codegen/KernelLibrary.h"
#include "codegen/NvrtcCompiler.h"
#include "ir/IRText.h"
#include "passes/pipeline/ParallelCompile.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <map>

namespace strata {
namespace {

/// The CUDA kernel library of the plan `strata compile SPEC` writes.
llvm::Expected<codegen::KernelLibrary>
compiledCudaLibrary(const pb::ModelSpec &spec) {
  ParallelCompileOptions o;
  o.microbatches = spec.training().grad_accum();
  o.fusion = true;
  auto compiled = compilePipeline(buildModelGraph(resolveModelSpec(spec)), o);
  if (!compiled)
    return compiled.takeError();
  // The program tags of tools/strata/PipelineProto.cpp.
  std::vector<codegen::TaggedProgram> programs;
  for (const PipelineStage &s : compiled->pipeline.stages) {
    std::string j = std::to_string(s.index);
    programs.push_back({"s" + j + "f", &s.forward});
    programs.push_back({"s" + j + "b", &s.backward});
  }
  for (size_t r = 0; r < compiled->pipeline.optimizers.size(); ++r)
    programs.push_back(
        {"r" + std::to_string(r) + "o", &compiled->pipeline.optimizers[r]});
  return codegen::renderLibrary(programs, codegen::Target::Cuda);
}

class KernelResources : public testing::TestWithParam<const char *> {};

TEST_P(KernelResources, NoSpillsNoLocalMemoryOnSm90) {
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << toString(std::move(e));
  auto archs = codegen::nvrtcSupportedArchs();
  ASSERT_TRUE(llvm::is_contained(archs, 90))
      << "NVRTC " << codegen::nvrtcVersion() << " cannot target sm_90";
  auto lib = compiledCudaLibrary(test::exampleSpec(GetParam()));
  ASSERT_TRUE(bool(lib)) << toString(lib.takeError());
  ASSERT_FALSE(lib->entries.empty());
  auto out =
      codegen::compileCubinWithLog(lib->source, 90, {"--ptxas-options=-v"},
                                   std::string(GetParam()) + "_kernels.cu");
  ASSERT_TRUE(bool(out)) << toString(out.takeError());
  auto report = codegen::parsePtxasReport(out->log);
  ASSERT_TRUE(bool(report)) << toString(report.takeError()) << "\n" << out->log;
  llvm::StringMap<codegen::KernelResources> byName;
  for (const codegen::KernelResources &k : *report)
    byName[k.name] = k;

  std::string table;
  llvm::raw_string_ostream os(table);
  os << GetParam() << " on sm_90 (NVRTC " << codegen::nvrtcVersion()
     << "): kernel, threads, registers, stack, spill stores / loads\n";
  std::map<std::string, codegen::CudaLaunch> launches; // by distinct symbol
  for (const codegen::KernelEntry &e : lib->entries)
    launches[e.symbol] = e.launch;
  for (const auto &[symbol, launch] : launches) {
    std::vector<std::pair<std::string, unsigned>> kernels = {
        {symbol, launch.threads}};
    if (launch.partialDoubles)
      kernels.push_back({symbol + "_sums", launch.sumThreads});
    for (const auto &[name, threads] : kernels) {
      auto it = byName.find(name);
      ASSERT_NE(it, byName.end())
          << "ptxas reported nothing for kernel " << name << "\n"
          << out->log;
      const codegen::KernelResources &k = it->second;
      os << "  " << llvm::left_justify(name, 20) << " "
         << llvm::format("%5u %4d %5lld %5lld / %lld\n", threads, k.registers,
                         (long long)k.stackFrame, (long long)k.spillStores,
                         (long long)k.spillLoads);
      EXPECT_EQ(k.spillStores + k.spillLoads, 0)
          << GetParam() << ": kernel " << name << " spills (" << k.spillStores
          << " bytes stored, " << k.spillLoads << " loaded) at " << k.registers
          << " registers";
      EXPECT_EQ(k.stackFrame, 0)
          << GetParam() << ": kernel " << name << " uses " << k.stackFrame
          << " bytes of local memory per thread";
      EXPECT_LE(int64_t(k.registers) * threads, 65536)
          << GetParam() << ": kernel " << name << " needs " << k.registers
          << " registers x " << threads << " threads";
    }
  }
  std::cout << os.str();
}

INSTANTIATE_TEST_SUITE_P(Examples, KernelResources,
                         testing::Values("gpt2_124m", "gpt2_1.5b", "llama2_7b"),
                         [](const auto &info) {
                           std::string name = info.param;
                           llvm::erase_if(
                               name, [](char c) { return !llvm::isAlnum(c); });
                           return name;
                         });

// Every row op (test::kRowOpsIR) at the longest fused row, kMaxFusedRow, in
// f32 and f64: the most a thread of a row kernel caches.
TEST(KernelResources, RowOpsAtTheLongestRowDoNotSpill) {
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << toString(std::move(e));
  for (const char *dtype : {"f32", "f64"}) {
    std::string text = test::withDType(test::kRowOpsIR, dtype);
    for (size_t at; (at = text.find("40]")) != std::string::npos;)
      text.replace(at, 2, std::to_string(kMaxFusedRow)); // rows of 40
    auto g = parseGraph(text, "row_ops");
    ASSERT_TRUE(bool(g)) << toString(g.takeError());
    ASSERT_TRUE(fuseGraph(*g));
    std::vector<codegen::KernelPlan> plans = test::fusedPlans(*g);
    ASSERT_EQ(llvm::count_if(plans, [](auto &p) { return p.isRowKernel(); }),
              6);
    codegen::KernelSource source =
        codegen::renderKernels(plans, codegen::Target::Cuda);
    auto out =
        codegen::compileCubinWithLog(source.text, 90, {"--ptxas-options=-v"});
    ASSERT_TRUE(bool(out)) << toString(out.takeError());
    auto report = codegen::parsePtxasReport(out->log);
    ASSERT_TRUE(bool(report)) << toString(report.takeError());
    EXPECT_GE(report->size(), plans.size());
    for (const codegen::KernelResources &k : *report) {
      std::cout << dtype << " " << k.name << ": " << k.registers
                << " registers\n";
      EXPECT_EQ(k.spillStores + k.spillLoads + k.stackFrame, 0)
          << dtype << " row ops: kernel " << k.name << " spills "
          << k.spillStores << " / " << k.spillLoads << " bytes, stack "
          << k.stackFrame << " at " << k.registers << " registers";
    }
  }
}

// The same text compiles with nvcc to an sm_90 cubin (nvcc includes the
// C++ headers NVRTC lacks, which the prelude must not clash with). Skipped
// where the toolkit has no nvcc; NVRTC is all strata needs.
TEST(Nvcc, CompilesTheLibraryToASm90Cubin) {
  std::string nvcc = STRATA_NVCC;
  if (nvcc.empty() || !llvm::sys::fs::can_execute(nvcc))
    GTEST_SKIP() << "no nvcc in the CUDA toolkit (" << nvcc << ")";
  auto lib = compiledCudaLibrary(test::exampleSpec("gpt2_124m"));
  ASSERT_TRUE(bool(lib)) << toString(lib.takeError());
  llvm::SmallString<128> cu, cubin;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("kernels", "cu", cu));
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("kernels", "cubin", cubin));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(cu, ec);
    ASSERT_FALSE(ec) << ec.message();
    os << lib->source;
  }
  std::string err;
  int rc = llvm::sys::ExecuteAndWait(
      nvcc, {nvcc, "-arch=sm_90", "-cubin", "-o", cubin.str(), cu.str()},
      llvm::None, {}, 0, 0, &err);
  uint64_t size = 0;
  llvm::sys::fs::file_size(cubin, size);
  llvm::sys::fs::remove(cu);
  llvm::sys::fs::remove(cubin);
  EXPECT_EQ(rc, 0) << nvcc << " failed: " << err;
  EXPECT_GT(size, 0u);
}

TEST(PtxasReport, ReadsEveryKernel) {
  auto k = codegen::parsePtxasReport(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'a' for 'sm_90'\n"
      "ptxas info    : Function properties for a\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 104 bytes smem\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_90'\n"
      "ptxas info    : Function properties for b\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 0 barriers\n");
  ASSERT_TRUE(bool(k)) << toString(k.takeError());
  ASSERT_EQ(k->size(), 2u);
  EXPECT_EQ((*k)[0].name, "a");
  EXPECT_EQ((*k)[0].registers, 255);
  EXPECT_EQ((*k)[0].stackFrame, 16);
  EXPECT_EQ((*k)[0].spillStores, 8);
  EXPECT_EQ((*k)[0].spillLoads, 4);
  EXPECT_EQ((*k)[0].sharedBytes, 104);
  EXPECT_EQ((*k)[1].name, "b");
  EXPECT_EQ((*k)[1].registers, 32);
  EXPECT_EQ((*k)[1].stackFrame + (*k)[1].spillStores, 0);
  auto bad = codegen::parsePtxasReport(
      "ptxas info    : Compiling entry function 'c' for 'sm_90'\n");
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}

} // namespace
} // namespace strata
