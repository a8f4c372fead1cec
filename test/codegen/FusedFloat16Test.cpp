//===- FusedFloat16Test.cpp - bf16 / f16 fused CPU kernels vs unfused ops -===//
//
// A fused kernel of a 16-bit body loads bf16 / f16 values as f32, computes
// every member in f32 and rounds to 16 bits once per store (codegen/
// KernelPlan.h); the unfused CPU ops (runtime/cpu/CpuOpKernels.cpp) round
// every intermediate result to 16 bits. The tests run each fused kernel
// against its body, node by node on the CPU device, and whole bf16
// microbatch graphs fused against unfused.
//
// Tolerance. bf16 keeps 8 significant bits: one rounding to nearest moves a
// value by at most u = 2^-9 of itself (f16: 11 bits, u = 2^-12). The body
// rounds each of a kernel's intermediates, the fused kernel none of them;
// both round the stored result. The kernels here are chains of at most ~6
// ops between loads and a store (bias add, gelu, dropout, residual add, a
// norm, scale), whose operations amplify a relative input error by at most
// ~2 (gelu's slope is <= 1.13, a norm divides by its row's spread, which is
// >= ~0.5 for the uniform [-2, 2) inputs), so the body's accumulated error
// stays below 2 * 6 * u = 12u, and the two final roundings may then land one
// ulp (2u) apart: |fused - body| <= 16u * (|body| + 1), i.e. 2^-5 for bf16
// and 2^-8 for f16 (the "+ 1" covers results near zero, whose error is set
// by their operands' magnitude, not their own). Dropout masks are integer
// comparisons: a flipped bit would change an element by its whole value,
// far beyond the bound. A column sum of N rows adds N such differences, so
// its bound is 16u times the sum of its summands' magnitudes, not of its
// own (which cancellation may make small): ColumnSumsWithin... checks that
// on summands it knows; the per-kernel comparisons skip sums. Whole graphs:
// loss and gradients normwise, max|a - b| <= 2^-5 * max|b| per tensor: the
// per-element differences above, averaged by matmul and loss reductions, are
// not amplified beyond a bf16 rounding of the largest entry (8 ulps of it, for
// margin), with an absolute floor for gradients that are zero up to rounding
// (kZeroTol).
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "codegen/Renderer.h"
#include "ir/IRText.h"
#include "passes/precision/MixedPrecision.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/FusedKernels.h"
#include "test/codegen/RunOnCpu.h"

#include <cmath>

namespace strata {
namespace {

// Absolute floor for gradients that are zero up to rounding (attn.k.b:
// softmax is invariant to adding one vector to every key), whose entries
// are sums of rounding errors: FusedCpuTest's f32 floor (1e-9) scaled by
// the ratio of the unit roundoffs, 2^-9 / 2^-24 = 2^15.
const double kZeroTol = 1e-9 * std::ldexp(1.0, 15);

/// 16 roundings of the format (see the header): 16 * 2^-9 and 16 * 2^-12.
double elementTol(DType t) {
  return t == DType::BF16 ? std::ldexp(1.0, -5) : std::ldexp(1.0, -8);
}

/// Runs every fused node of `fused` against its body on the CPU device;
/// returns how many, and the worst element difference in `worst`.
int checkEveryKernel(const Graph &fused, DType dt, double &worst) {
  auto module = prepareFusedKernels(fused);
  if (!module) {
    ADD_FAILURE() << toString(module.takeError());
    return 0;
  }
  LaunchContext ctx;
  ctx.module = module->get();
  ctx.seed = 1234;
  ctx.step = 7;
  std::mt19937 rng(11);
  int count = 0;
  for (const Node &n : fused.nodes()) {
    if (n.op != OpKind::Fused)
      continue;
    ++count;
    std::vector<HostTensor> inputs;
    llvm::SmallVector<const void *, 8> ins;
    for (ValueId v : n.operands)
      inputs.push_back(test::randomTensor(fused.type(v), rng));
    for (const HostTensor &t : inputs)
      ins.push_back(t.raw());
    std::vector<HostTensor> got;
    llvm::SmallVector<void *, 4> outs;
    for (ValueId r : n.results)
      got.emplace_back(fused.type(r));
    for (HostTensor &t : got)
      outs.push_back(t.raw());
    if (auto e = runCpuKernel(fused, n, ins, outs, ctx)) {
      ADD_FAILURE() << toString(std::move(e));
      return count;
    }
    std::vector<HostTensor> want = test::runOnCpu(*n.body, inputs, ctx);
    auto plan = codegen::planKernel(*n.body);
    if (want.size() != got.size() || !plan) {
      ADD_FAILURE() << "kernel " << n.attrs.getString("kernel");
      return count;
    }
    for (size_t r = 0; r < got.size(); ++r) {
      if (plan->sumOf(r))
        continue; // bounded by the sum of |summands|: ColumnSumsWithin...
      test::Diff d = test::elementDiff(got[r], want[r]);
      worst = std::max(worst, d.worst);
      EXPECT_LE(d.worst, elementTol(dt))
          << "kernel " << n.attrs.getString("kernel") << " (" << n.scope
          << ") result %" << fused.value(n.results[r]).name << " element "
          << d.at << ": fused " << got[r].get(d.at) << ", body "
          << want[r].get(d.at);
    }
  }
  return count;
}

bool reads16(const Graph &g, const Node &n) {
  auto is16 = [&](ValueId v) { return codegen::isFloat16(g.type(v).dtype); };
  return llvm::any_of(n.operands, is16) || llvm::any_of(n.results, is16);
}

// Every row op with a prologue and an epilogue (test::kRowOpsIR) in 16 bits:
// all six row kernels fuse and match the unfused ops.
class RowOps16 : public testing::TestWithParam<const char *> {};

TEST_P(RowOps16, FusedKernelsMatchTheUnfusedOps) {
  std::string text = test::withDType(test::kRowOpsIR, GetParam());
  auto g = parseGraph(text, "row_ops");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  ASSERT_TRUE(fuseGraph(*g));
  for (const Node &n : g->nodes())
    EXPECT_FALSE(rowOpOperands(n.op)) << opName(n.op).str() << " not fused";
  DType dt = *parseDType(GetParam());
  double worst = 0;
  EXPECT_EQ(checkEveryKernel(*g, dt, worst), 6);
  RecordProperty("worst", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(DTypes, RowOps16, testing::Values("bf16", "f16"));

// A bf16 bias gradient, reduce_sum(mul(x, y)) over 300 rows, summed as a
// column-sum epilogue: within 16u * sum_i |x_i y_i| + 2u |sum| of the
// unfused ops (each rounded product differs by at most 16u of itself, as
// above; both round the sum, 2u apart at most; the f32 / f64 accumulation
// errors, ~300 * 2^-24 of the same magnitude sum, are far below 16u).
TEST(Fused16, ColumnSumsWithinTheirSummandsBound) {
  auto g = parseGraph(R"(
graph @sums(%x: bf16[300,24], %y: bf16[300,24]) {
  %p, %s = fused(%x, %y) {kernel="sums16"} : bf16[300,24], bf16[24] {
    %p = mul(%x, %y) : bf16[300,24]
    %s = reduce_sum(%p) {axes=[0]} : bf16[24]
    return %p, %s
  }
  return %p, %s
}
)",
                      "sums");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  auto module = prepareFusedKernels(*g);
  ASSERT_TRUE(bool(module)) << toString(module.takeError());
  LaunchContext ctx;
  ctx.module = module->get();
  std::mt19937 rng(5);
  const Node &n = g->nodes().front();
  std::vector<HostTensor> in;
  for (ValueId v : n.operands)
    in.push_back(test::randomTensor(g->type(v), rng));
  std::vector<HostTensor> got;
  for (ValueId r : n.results)
    got.emplace_back(g->type(r));
  ASSERT_FALSE(bool(runCpuKernel(*g, n, {in[0].raw(), in[1].raw()},
                                 {got[0].raw(), got[1].raw()}, ctx)));
  std::vector<HostTensor> want = test::runOnCpu(*n.body, in, ctx);
  ASSERT_EQ(want.size(), 2u);
  const double u = std::ldexp(1.0, -9);
  for (int64_t c = 0; c < 24; ++c) {
    double mag = 0;
    for (int64_t r = 0; r < 300; ++r)
      mag += std::abs(in[0].get(r * 24 + c) * in[1].get(r * 24 + c));
    double body = want[1].get(c);
    EXPECT_LE(std::abs(got[1].get(c) - body),
              16 * u * mag + 2 * u * std::abs(body))
        << "column " << c << ": fused " << got[1].get(c) << ", body " << body;
  }
  EXPECT_LE(test::elementDiff(got[0], want[0]).worst, elementTol(DType::BF16));
}

// The mixed-precision microbatch graphs of the tiny examples: every 16-bit
// kernel the fusion pass makes matches its body, and the whole graph's loss
// and gradients match the unfused graph.
class Fused16Model : public testing::TestWithParam<const char *> {};

TEST_P(Fused16Model, EveryKernelMatchesItsBody) {
  Graph g = test::microbatchOf(test::exampleSpec(GetParam()));
  ASSERT_FALSE(bool(applyMixedPrecision(g, DType::BF16)));
  ASSERT_TRUE(fuseGraph(g));
  int sixteen = 0;
  for (const Node &n : g.nodes())
    sixteen += n.op == OpKind::Fused && reads16(g, n);
  EXPECT_GT(sixteen, 0) << "no 16-bit kernel:\n" << graphToString(g);
  double worst = 0;
  EXPECT_GT(checkEveryKernel(g, DType::BF16, worst), 0);
  RecordProperty("worst", std::to_string(worst));
}

TEST_P(Fused16Model, LossAndGradsMatchUnfused) {
  Graph plain = test::microbatchOf(test::exampleSpec(GetParam()));
  ASSERT_FALSE(bool(applyMixedPrecision(plain, DType::BF16)));
  Graph fused = plain;
  ASSERT_TRUE(fuseGraph(fused));
  test::fusedPlans(fused); // fails the test on a body without a plan
  // Loss and gradients within 2^-5 of each tensor's largest entry.
  test::expectFusedMatchesPlain(plain, fused, std::ldexp(1.0, -5), kZeroTol);
}

INSTANTIATE_TEST_SUITE_P(Models, Fused16Model,
                         testing::Values("gpt_tiny", "llama_tiny"));

// The generated C++ of a 16-bit kernel: 16-bit pointers, the CPU's own
// conversions (runtime/kernels/Float16.h, embedded) at the loads and the
// stores, f32 in between; a cast to bf16 rounds where it stands.
TEST(Fused16, CppKernelLoadsWidensAndStoresRounded) {
  auto g = parseGraph(R"(
graph @k(%x: bf16[4,8], %b: bf16[8], %y: f32[4,8]) {
  %o, %c = fused(%x, %b, %y) {kernel="k16"} : bf16[4,8], f32[4,8] {
    %a = add(%x, %b) : bf16[4,8]
    %g = gelu(%a) {approx="tanh"} : bf16[4,8]
    %yb = cast(%y) {dtype="bf16"} : bf16[4,8]
    %o = mul(%g, %yb) : bf16[4,8]
    %c = cast(%o) {dtype="f32"} : f32[4,8]
    return %o, %c
  }
  return %o, %c
}
)",
                      "k16");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  auto plan = codegen::planKernel(*g->nodes().front().body);
  ASSERT_TRUE(bool(plan)) << toString(plan.takeError());
  std::string text = codegen::renderKernels({*plan}, codegen::Target::Cpp).text;
  for (const char *want :
       {"inline uint16_t floatToBf16(float f)",
        "const unsigned short *in0 = static_cast<const unsigned short *>",
        "unsigned short *out0 = static_cast<unsigned short *>(out[0]);",
        "const float v0 = strata::kernels::bf16ToFloat(in0[i]);",
        "strata::kernels::bf16ToFloat(strata::kernels::floatToBf16((float)("
        "double)",
        "out0[i] = strata::kernels::floatToBf16(", "float *out1"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  double worst = 0;
  EXPECT_EQ(checkEveryKernel(*g, DType::BF16, worst), 1);
}

} // namespace
} // namespace strata
