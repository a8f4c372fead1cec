//===- KernelPlanTest.cpp - Kernel plans and the text of both targets -----===//
#include "codegen/KernelPlan.h"
#include "codegen/Renderer.h"
#include "ir/IRText.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

// The body of the first fused node of `text`.
std::shared_ptr<const Graph> bodyOf(llvm::StringRef text, Graph &keep) {
  auto g = parseGraph(text, "test");
  if (!g) {
    ADD_FAILURE() << toString(g.takeError());
    return nullptr;
  }
  keep = std::move(*g);
  return keep.nodes().front().body;
}

bool contains(const std::string &s, llvm::StringRef part) {
  return s.find(part.str()) != std::string::npos;
}

// Bias + GELU after a matmul: the anchor's value is load 0 and lives in the
// buffer of the body's first f32[2,3,4] result; [2,3,4] + [4] coalesces to
// rows of 4.
constexpr const char *kEpilogue = R"(
graph @g(%x: f32[2,3,5], %w: f32[5,4], %b: f32[4]) {
  %h, %y = fused(%x, %w, %b) {kernel="epilogue"} : f32[2,3,4], f32[2,3,4] {  # mlp
    %m = matmul(%x, %w) : f32[2,3,4]  # mlp.fc1
    %h = add(%m, %b) : f32[2,3,4]  # mlp.fc1
    %y = gelu(%h) {approx="tanh"} : f32[2,3,4]  # mlp.act
    return %h, %y
  }
  return %y
}
)";

TEST(KernelPlan, MatmulEpilogueWithBias) {
  Graph g;
  auto body = bodyOf(kEpilogue, g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  EXPECT_EQ(p->anchor, 0);
  EXPECT_EQ(p->anchorResult, 0);
  EXPECT_EQ(p->dims, (llvm::SmallVector<int64_t, 4>{6, 4}));
  ASSERT_EQ(p->loads.size(), 2u);
  EXPECT_EQ(p->loads[0].operand, -1); // the anchor's result
  EXPECT_EQ(p->loads[0].strides, (llvm::SmallVector<int64_t, 4>{4, 1}));
  EXPECT_EQ(p->loads[1].operand, 2); // %b
  EXPECT_EQ(p->loads[1].strides, (llvm::SmallVector<int64_t, 4>{0, 1}));
  EXPECT_EQ(p->stores.size(), 2u);
  EXPECT_EQ(p->inner(), 4);
  EXPECT_FALSE(p->usesRng);
}

TEST(Renderer, TargetsShareTheElementCodeAndDifferInTheLoop) {
  Graph g;
  auto body = bodyOf(kEpilogue, g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  std::string cpp = codegen::renderKernels({*p}, codegen::Target::Cpp).text;
  std::string cuda = codegen::renderKernels({*p}, codegen::Target::Cuda).text;
  // Shared: the per-element code with the IR names and scopes.
  for (const std::string &s : {cpp, cuda}) {
    EXPECT_TRUE(contains(s, "const float v2 = v0 + v1;  // %h = add")) << s;
    EXPECT_TRUE(contains(s, "      // mlp.act\n") ||
                contains(s, "    // mlp.act\n"))
        << s;
    EXPECT_TRUE(contains(s, "out0[i] = v2;")) << s;
    EXPECT_TRUE(contains(s,
                         "after %m = matmul (mlp.fc1), which the runtime runs "
                         "into out0 first"))
        << s;
  }
  // C++: row loops, the bias read at the column, std:: math.
  EXPECT_TRUE(contains(cpp, "extern \"C\" void epilogue(const void *const *in"))
      << cpp;
  EXPECT_TRUE(contains(cpp, "#pragma omp simd")) << cpp;
  EXPECT_TRUE(contains(cpp, "const float v1 = in1[c];  // %b")) << cpp;
  EXPECT_TRUE(contains(cpp, "strata::kernels::ktanh(t0)")) << cpp;
  // CUDA: grid-stride loop, the bias by the flat index, float math names.
  EXPECT_TRUE(
      contains(cuda, "extern \"C\" __global__ void epilogue(const float *in0, "
                     "const float *in1, float *out0, float *out1, int64_t n,"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "i += (int64_t)blockDim.x * gridDim.x")) << cuda;
  EXPECT_TRUE(contains(cuda, "const float v1 = in1[(i % 4)];  // %b")) << cuda;
  EXPECT_TRUE(contains(cuda, "tanhf(t0)")) << cuda;
  EXPECT_FALSE(contains(cuda, "std::")) << cuda;
}

// Broadcast patterns that do not coalesce index by div/mod of the row (C++)
// or of the flat index (CUDA).
TEST(Renderer, BroadcastIndexMath) {
  Graph g;
  auto body = bodyOf(R"(
graph @g(%x: f64[4,6,8], %z: f64[6,1], %w: f64[4,1,1]) {
  %y = fused(%x, %z, %w) {kernel="bcast"} : f64[4,6,8] {
    %a = mul(%x, %z) : f64[4,6,8]
    %y = add(%a, %w) : f64[4,6,8]
    return %y
  }
  return %y
}
)",
                     g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  EXPECT_EQ(p->dims, (llvm::SmallVector<int64_t, 4>{4, 6, 8}));
  std::string cpp = codegen::renderKernels({*p}, codegen::Target::Cpp).text;
  std::string cuda = codegen::renderKernels({*p}, codegen::Target::Cuda).text;
  EXPECT_TRUE(contains(cpp, "in1[(r % 6)]")) << cpp;
  EXPECT_TRUE(contains(cpp, "in2[(r / 6)]")) << cpp;
  EXPECT_TRUE(contains(cuda, "in1[((i / 8) % 6)]")) << cuda;
  EXPECT_TRUE(contains(cuda, "in2[(i / 48)]")) << cuda;
  EXPECT_TRUE(contains(cuda, "const double v0 = in0[i];")) << cuda;
}

TEST(Renderer, DropoutThresholdAndScaleAreExact) {
  Graph g;
  auto body = bodyOf(R"(
graph @g(%x: f32[16]) {
  %y = fused(%x) {kernel="drop"} : f32[16] {
    %d = dropout(%x) {p=0.1, stream=3} : f32[16]
    %y = scale(%d) {value=2.0} : f32[16]
    return %y
  }
  return %y
}
)",
                     g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  EXPECT_TRUE(p->usesRng);
  std::string cpp = codegen::renderKernels({*p}, codegen::Target::Cpp).text;
  // ceil(0.1 * 2^32) = 429496730; float(1 / 0.9) = 1.11111116f.
  EXPECT_TRUE(
      contains(cpp, "strata_philox((uint64_t)i, step, (uint32_t)seed, 3u) >= "
                    "429496730ull ? v0 * 1.11111116f : 0.0f"))
      << cpp;
  EXPECT_TRUE(contains(cpp, "STRATA_FN uint32_t strata_philox(")) << cpp;
}

// The same ops on the same shapes under other names and scopes (every layer
// of a model): one kernel, two symbols.
TEST(Renderer, SameCodeIsRenderedOnce) {
  auto g = parseGraph(R"(
graph @g(%x: f32[8], %y: f32[8]) {
  %a = fused(%x, %y) {kernel="first"} : f32[8] {
    %s = add(%x, %y) : f32[8]  # layers.0
    %a = tanh(%s) : f32[8]  # layers.0
    return %a
  }
  %b = fused(%a, %y) {kernel="second"} : f32[8] {
    %t = add(%a, %y) : f32[8]  # layers.1
    %b = tanh(%t) : f32[8]  # layers.1
    return %b
  }
  %c = fused(%b, %y) {kernel="third"} : f32[8] {
    %u = sub(%b, %y) : f32[8]
    %c = tanh(%u) : f32[8]
    return %c
  }
  return %c
}
)",
                      "test");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  std::vector<codegen::KernelPlan> plans;
  for (const Node &n : g->nodes()) {
    auto p = codegen::planKernel(*n.body);
    ASSERT_TRUE(bool(p)) << toString(p.takeError());
    plans.push_back(std::move(*p));
  }
  codegen::KernelSource src =
      codegen::renderKernels(plans, codegen::Target::Cpp);
  EXPECT_EQ(src.symbols, (std::vector<std::string>{"first", "first", "third"}));
  EXPECT_TRUE(contains(src.text, "//   also runs second (the same code)\n"))
      << src.text;
  EXPECT_FALSE(contains(src.text, "void second(")) << src.text;
  EXPECT_TRUE(contains(src.text, "void third(")) << src.text;
}

// A bias gradient: the column sums of the kernel's value ride along with its
// stores. The C++ kernel adds its rows into an f64 row (out1); the CUDA
// kernel walks one column's rows per thread and stores the sum; the last
// dim stays its own loop dim even though every load is contiguous.
TEST(Renderer, ColumnSums) {
  Graph g;
  auto body = bodyOf(R"(
graph @g(%x: f32[2,3,8], %y: f32[2,3,8]) {
  %d, %b = fused(%x, %y) {kernel="bias_grad"} : f32[2,3,8], f32[8] {
    %d = mul(%x, %y) : f32[2,3,8]  # mlp.act
    %b = reduce_sum(%d) {axes=[0, 1]} : f32[8]  # mlp.fc1
    return %d, %b
  }
  return %b
}
)",
                     g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  EXPECT_EQ(p->dims, (llvm::SmallVector<int64_t, 4>{6, 8}));
  ASSERT_EQ(p->sums.size(), 1u);
  EXPECT_EQ(p->sums[0].store, 1);
  std::string cpp = codegen::renderKernels({*p}, codegen::Target::Cpp).text;
  std::string cuda = codegen::renderKernels({*p}, codegen::Target::Cuda).text;
  for (const std::string &s : {cpp, cuda})
    EXPECT_TRUE(contains(s, "//   out1 = %b : f32[8], column sums of %d")) << s;
  EXPECT_TRUE(contains(cpp, "double *out1 = static_cast<double *>(out[1]);"))
      << cpp;
  EXPECT_TRUE(contains(cpp, "out0[i] = v2;\n      out1[c] += (double)v2;"))
      << cpp;
  EXPECT_TRUE(contains(cuda, "c < 8;")) << cuda;
  EXPECT_TRUE(contains(cuda, "double sum1 = 0.0;\n    for (int64_t r = 0; r < 6; ++r) {"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "sum1 += (double)v2;")) << cuda;
  EXPECT_TRUE(contains(cuda, "out1[c] = (float)sum1;")) << cuda;
}

struct PlanError {
  const char *name;
  const char *body;  // body lines of `%y = fused(%x, %w) : f32[2,4]`
  const char *error; // expected substring
};

class KernelPlanErrors : public testing::TestWithParam<PlanError> {};

TEST_P(KernelPlanErrors, SayWhatDoesNotFit) {
  std::string text =
      std::string("graph @g(%x: f32[2,4], %w: f32[4,4]) {\n") +
      "  %y = fused(%x, %w) {kernel=\"k\"} : " + GetParam().body +
      "  return %y\n}\n";
  Graph g;
  auto body = bodyOf(text, g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_FALSE(bool(p));
  std::string msg = toString(p.takeError());
  EXPECT_NE(msg.find(GetParam().error), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, KernelPlanErrors,
    testing::Values(
        PlanError{"NoRule",
                  "f32[2,4] {\n    %y = softmax(%x) : f32[2,4]\n"
                  "    return %y\n  }\n",
                  "kernel k: no rendering rule for softmax (%y)"},
        PlanError{"OnlySum",
                  "f32[4] {\n    %y = reduce_sum(%x) {axes=[0]} : f32[4]\n"
                  "    return %y\n  }\n",
                  "kernel k: has no elementwise op"},
        PlanError{"RowSum",
                  "f32[2] {\n    %a = neg(%x) : f32[2,4]\n"
                  "    %y = reduce_sum(%a) {axes=[1]} : f32[2]\n"
                  "    return %y\n  }\n",
                  "kernel k: %y is not a column sum of the loop"},
        PlanError{"ReadsItsSum",
                  "f32[2,4] {\n    %a = neg(%x) : f32[2,4]\n"
                  "    %s = reduce_sum(%a) {axes=[0]} : f32[4]\n"
                  "    %y = add(%a, %s) : f32[2,4]\n    return %y\n  }\n",
                  "kernel k: %y reads the column sum %s (a sum is complete "
                  "only after the loop)"},
        PlanError{"OtherShape",
                  "f32[4,4] {\n    %a = neg(%x) : f32[2,4]\n"
                  "    %y = add(%w, %w) : f32[4,4]\n    return %y\n  }\n",
                  "kernel k: %y is f32[4,4], not the loop's shape"},
        PlanError{"AnchorWithoutBuffer",
                  "f64[2,4] {\n    %m = matmul(%x, %w) : f32[2,4]\n"
                  "    %y = cast(%m) {dtype=\"f64\"} : f64[2,4]\n    return "
                  "%y\n  }\n",
                  "no result of the anchor's type f32[2,4] to hold the "
                  "anchor's result"},
        PlanError{"OnlyAnchor",
                  "f32[2,4] {\n    %y = matmul(%x, %w) : f32[2,4]\n    return "
                  "%y\n  }\n",
                  "kernel k: has no elementwise op"}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace strata
