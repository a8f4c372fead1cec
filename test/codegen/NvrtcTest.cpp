//===- NvrtcTest.cpp - Every fused CUDA kernel of the examples compiles ---===//
//
// No GPU needed: NVRTC emits SASS for a named architecture. Skipped, saying
// why, only where libnvrtc cannot be loaded. For each example
// model (graphs carry shapes only, so gpt2_124m costs nothing to build), the
// microbatch graph is fused and all its kernels compile as one program per
// architecture, sm_80 and sm_90; the cubin must be non-empty and define
// the symbol of every kernel (kernels with the same code, e.g. one per
// layer, share one).
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "ir/IRText.h"

#include "codegen/NvrtcCompiler.h"
#include "codegen/Renderer.h"

namespace strata {
namespace {

class NvrtcModel : public testing::TestWithParam<const char *> {};

TEST_P(NvrtcModel, EveryFusedKernelCompilesForSm80AndSm90) {
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << toString(std::move(e));
  std::vector<int> archs = codegen::nvrtcSupportedArchs();
  Graph g = test::microbatchOf(test::exampleSpec(GetParam()));
  ASSERT_TRUE(fuseGraph(g));
  std::vector<codegen::KernelPlan> plans;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused)
      continue;
    auto plan = codegen::planKernel(*n.body);
    ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
    plans.push_back(std::move(*plan));
  }
  ASSERT_FALSE(plans.empty());
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cuda);
  for (int arch : {80, 90}) {
    ASSERT_TRUE(llvm::is_contained(archs, arch))
        << "NVRTC " << codegen::nvrtcVersion() << " cannot target sm_" << arch;
    auto cubin = codegen::compileCubin(source.text, arch);
    ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError());
    EXPECT_GT(cubin->size(), 0u);
    for (const std::string &symbol : source.symbols)
      EXPECT_NE(cubin->find(symbol + '\0'), std::string::npos)
          << "sm_" << arch << " cubin lacks kernel " << symbol;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, NvrtcModel,
                         testing::Values("gpt_tiny", "llama_tiny",
                                         "gpt2_124m"));

// The row kernels of every row op (test::kRowOpsIR), f32 and f64: each with
// its second kernel (NAME_sums) where it has column sums.
TEST(Nvrtc, RowKernelsOfEveryRowOpCompile) {
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << toString(std::move(e));
  for (const char *dtype : {"f32", "f64"}) {
    auto g = parseGraph(test::withDType(test::kRowOpsIR, dtype), "row_ops");
    ASSERT_TRUE(bool(g)) << toString(g.takeError());
    ASSERT_TRUE(fuseGraph(*g));
    std::vector<codegen::KernelPlan> plans = test::fusedPlans(*g);
    ASSERT_EQ(llvm::count_if(plans, [](auto &p) { return p.isRowKernel(); }),
              6);
    codegen::KernelSource source =
        codegen::renderKernels(plans, codegen::Target::Cuda);
    auto cubin = codegen::compileCubin(source.text, 90);
    ASSERT_TRUE(bool(cubin)) << toString(cubin.takeError()) << source.text;
    for (size_t k = 0; k < plans.size(); ++k) {
      EXPECT_NE(cubin->find(source.symbols[k] + '\0'), std::string::npos);
      if (!plans[k].sums.empty()) {
        EXPECT_NE(cubin->find(source.symbols[k] + "_sums" + '\0'),
                  std::string::npos)
            << dtype << " " << source.symbols[k];
      }
    }
  }
}

TEST(Nvrtc, ErrorsCarryTheLog) {
  if (auto e = codegen::nvrtcAvailable())
    GTEST_SKIP() << toString(std::move(e));
  auto cubin = codegen::compileCubin(
      "extern \"C\" __global__ void k() { oops; }", 90, "bad.cu");
  ASSERT_FALSE(bool(cubin));
  std::string msg = toString(cubin.takeError());
  EXPECT_NE(msg.find("compiling bad.cu for sm_90"), std::string::npos) << msg;
  EXPECT_NE(msg.find("oops"), std::string::npos) << msg;
}

} // namespace
} // namespace strata
