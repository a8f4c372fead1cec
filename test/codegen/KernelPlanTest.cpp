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
  EXPECT_TRUE(contains(cpp, "strata::kernels::kexp(-t0)")) << cpp;
  EXPECT_TRUE(contains(cpp, "out0[i] = v2;")) << cpp;
  // CUDA: launch bounds, a grid-stride loop over groups of 4 elements read
  // and written as float4 when aligned, the bias by the flat index, float
  // math names.
  EXPECT_TRUE(contains(cuda, "extern \"C\" __global__ void "
                             "__launch_bounds__(256) epilogue(const float "
                             "*in0, const float *in1, float *out0, float "
                             "*out1, int64_t n,"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "g += (int64_t)blockDim.x * gridDim.x")) << cuda;
  EXPECT_TRUE(contains(cuda, "const int i0 = (int)g * 4;")) << cuda;
  EXPECT_TRUE(contains(cuda, "strata_load(a1, in1 + (i0 % 4), vec);")) << cuda;
  EXPECT_TRUE(contains(cuda, "const float v1 = a1[el];  // %b")) << cuda;
  EXPECT_TRUE(contains(cuda, "b0[el] = v2;")) << cuda;
  EXPECT_TRUE(contains(cuda, "strata_store(out0 + i0, b0, vec);")) << cuda;
  EXPECT_TRUE(contains(cuda, "const float4 t = *reinterpret_cast<const float4"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "expf(-t0)")) << cuda;
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
  // Contiguous x in pairs (double2), the broadcasts element by element.
  EXPECT_TRUE(contains(cuda, "strata_load(a0, in0 + i0, vec);")) << cuda;
  EXPECT_TRUE(contains(cuda, "const double v0 = a0[el];")) << cuda;
  EXPECT_TRUE(contains(cuda, "for (int el = 0; el < 2; ++el) {")) << cuda;
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
// kernel sums a chunk of rows of a group of columns per thread into a
// workspace, which a second kernel adds up in chunk order; the last dim
// stays its own loop dim even though every load is contiguous.
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
  EXPECT_TRUE(contains(cuda, "double acc1[4] = {};")) << cuda;
  EXPECT_TRUE(contains(cuda, "acc1[j] += (double)v2;")) << cuda;
  EXPECT_TRUE(contains(cuda, "partial[(0 + chunk) * 8 + c0 + el] = acc1[el];"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "for (int chunk = 0; chunk < 6; ++chunk)"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "out1[c] = (float)sum1;")) << cuda;
  codegen::CudaLaunch l = codegen::cudaLaunchOf(*p);
  EXPECT_EQ(l.kind, codegen::CudaLaunch::Kind::ColumnSums);
  EXPECT_EQ(l.threads, 256u);
  EXPECT_EQ(l.vector, 4);
  EXPECT_EQ(l.chunks, 6); // a row per chunk: 2 column groups are few
  EXPECT_EQ(l.partialDoubles, 6 * 8);
}

// A residual add (prologue) feeding a layer-norm gradient whose dx is added
// to another gradient (epilogue) and column-summed, with dw and db: one row
// kernel, two passes around the row op.
constexpr const char *kRowKernel = R"(
graph @g(%dy: f32[2,3,8], %a: f32[2,3,8], %b: f32[2,3,8], %w: f32[8], %bias: f32[8], %up: f32[2,3,8]) {
  %h, %dw, %db, %d, %s = fused(%dy, %a, %b, %w, %bias, %up) {kernel="lnrow"} : f32[2,3,8], f32[8], f32[8], f32[2,3,8], f32[8] {  # layers
    %h = add(%a, %b) : f32[2,3,8]  # layers.0.residual
    %dx, %dw, %db = layer_norm_grad(%dy, %h, %w, %bias) {eps=1e-05} : f32[2,3,8], f32[8], f32[8]  # layers.1.ln
    %d = add(%up, %dx) : f32[2,3,8]  # layers.1.ln
    %s = reduce_sum(%d) {axes=[0, 1]} : f32[8]  # layers.0.proj
    return %h, %dw, %db, %d, %s
  }
  return %h, %dw, %db, %d, %s
}
)";

TEST(Renderer, RowKernelPasses) {
  Graph g;
  auto body = bodyOf(kRowKernel, g);
  ASSERT_TRUE(body);
  auto p = codegen::planKernel(*body);
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  EXPECT_EQ(p->row, 1);
  EXPECT_EQ(p->dims, (llvm::SmallVector<int64_t, 4>{6, 8}));
  EXPECT_EQ(p->inPrologue, (std::vector<bool>{true, false, false, false}));
  // Scratch: dx (the row op's result) and h (read by the row op).
  ASSERT_EQ(p->scratch.size(), 2u);
  EXPECT_EQ(body->value(p->scratch[0]).name, "dx");
  EXPECT_EQ(body->value(p->scratch[1]).name, "h");
  ASSERT_EQ(p->sums.size(), 3u); // dw, db by the row op; s by reduce_sum
  EXPECT_TRUE(p->sums[0].byRowOp);
  EXPECT_TRUE(p->sums[1].byRowOp);
  EXPECT_FALSE(p->sums[2].byRowOp);
  std::string cpp = codegen::renderKernels({*p}, codegen::Target::Cpp).text;
  std::string cuda = codegen::renderKernels({*p}, codegen::Target::Cuda).text;
  for (const std::string &s : {cpp, cuda}) {
    EXPECT_TRUE(contains(s,
                         "// lnrow: 2 elementwise op(s) around "
                         "layer_norm_grad (layers.1.ln) and 1 column sum(s)"))
        << s;
    EXPECT_TRUE(contains(s, "scratch rows %dx %h")) << s;
  }
  // C++: one row per iteration, the prologue writes h's scratch row and
  // result 0, the statistics are f64 simd reductions, dw / db and the
  // column sum accumulate into f64 rows.
  EXPECT_TRUE(contains(cpp, "for (int64_t r = begin / 8; r < end / 8; ++r) {"))
      << cpp;
  EXPECT_TRUE(contains(cpp, "alignas(64) float s1[8];")) << cpp;
  EXPECT_TRUE(contains(cpp, "s1[c] = v2;\n      out0[i] = v2;")) << cpp;
  EXPECT_TRUE(contains(cpp, "#pragma omp simd reduction(+ : sumG, sumGX)"))
      << cpp;
  EXPECT_TRUE(
      contains(cpp, "s0[c] = (float)(rstd * (g - meanG - xhat * meanGX));"))
      << cpp;
  EXPECT_TRUE(contains(cpp, "out1[c] += (double)in2[i] * xhat;")) << cpp;
  EXPECT_TRUE(contains(cpp, "out2[c] += (double)in2[i];")) << cpp;
  EXPECT_TRUE(contains(cpp, "out3[i] = v2;\n      out4[c] += (double)v2;"))
      << cpp;
  // CUDA: a block per row (one warp: 2 groups of 4 columns), block sums for
  // the row statistics, per-thread scratch and column sums of one group,
  // per-chunk column sums in a workspace and a second kernel that adds them
  // in chunk order.
  EXPECT_TRUE(contains(cuda, "__launch_bounds__(32) lnrow(")) << cuda;
  EXPECT_TRUE(contains(cuda, "double *partial, int64_t n,")) << cuda;
  EXPECT_TRUE(
      contains(cuda, "sumGX = strata_block_sum<NW>(sumGX, strata_red);"))
      << cuda;
  EXPECT_TRUE(contains(cuda, "float s1[4];")) << cuda;
  EXPECT_TRUE(contains(cuda, "acc1[j] += (double)a2[el] * xhat;")) << cuda;
  EXPECT_TRUE(contains(cuda, "extern \"C\" __global__ void "
                             "__launch_bounds__(256) lnrow_sums(const "
                             "double *partial, float *out1, float *out2, "
                             "float *out4) {"))
      << cuda;
  codegen::CudaLaunch l = codegen::cudaLaunchOf(*p);
  EXPECT_EQ(l.kind, codegen::CudaLaunch::Kind::RowSums);
  EXPECT_EQ(l.threads, 32u);
  EXPECT_EQ(l.groupsPerThread, 1);
  EXPECT_EQ(l.chunks, 6);
  EXPECT_EQ(l.partialDoubles, 3 * 6 * 8);
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
                  "f32[2,1] {\n    %y = reduce_max(%x) {axes=[1], "
                  "keepdim=true} : f32[2,1]\n    return %y\n  }\n",
                  "kernel k: no rendering rule for reduce_max (%y)"},
        PlanError{"TwoRowOps",
                  "f32[2,4] {\n    %a = softmax(%x) : f32[2,4]\n"
                  "    %y = softmax(%a) : f32[2,4]\n    return %y\n  }\n",
                  "kernel k: has two row ops (%a, %y); a kernel takes one"},
        PlanError{"AnchorAndRow",
                  "f32[2,4] {\n    %m = matmul(%x, %w) : f32[2,4]\n"
                  "    %y = softmax(%m) : f32[2,4]\n    return %y\n  }\n",
                  "kernel k: a matmul anchor and row op %y cannot share a "
                  "kernel"},
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
