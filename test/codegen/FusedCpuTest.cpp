//===- FusedCpuTest.cpp - Generated CPU kernels against the unfused graph -===//
//
// Differential tests of the fused CPU path (runtime/cpu/FusedKernels.h):
//  - every fused kernel of the example models (forward + backward), run as a
//    one-node graph on random inputs, against its body run node by node by
//    an Executable with the built-in kernels;
//  - one kernel holding every op with a rendering rule, in f32 and f64;
//  - whole microbatch graphs, and the trainer's fusion flag: loss and every
//    gradient with and without fusion.
//
// Tolerance. A fused kernel runs the reference kernels' f32 operations in
// the same order with the same constants (codegen/Renderer.cpp); what may
// differ is the host compiler contracting a*b+c into one FMA under -O3
// -march=native (one rounding instead of two) and the math library's
// variants of exp/tanh/erf (within 1 ulp). Per element that is a few ulp of
// the largest intermediate: |a - b| <= 1e-5 * (|b| + 1) bounds it with
// margin (f32 ulp is 6e-8 relative; gelu's tanh and sigmoid's exp amplify
// by at most ~10 over their inputs' range here). Dropout masks are integer
// comparisons and must match exactly, which the bound enforces: a flipped
// mask bit changes an element by its whole value. Across a whole graph the
// per-element differences pass through matmuls and norms; gradients are
// compared normwise, max|a - b| <= 1e-5 * max|b| per tensor (no difference
// at all is the common case: the CPU kernels are deterministic and the
// fused ones do the same arithmetic).
//
//===----------------------------------------------------------------------===//
#include "TestGraphs.h"

#include "codegen/KernelPlan.h"
#include "ir/IRText.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/FusedKernels.h"
#include "runtime/kernels/Parallel.h"
#include "runtime/parallel/TrainingSession.h"
#include "test/codegen/RunOnCpu.h"

#include <cmath>
#include <cstring>

namespace strata {
namespace {

constexpr double kElemTol = 1e-5;
constexpr double kNormTol = 1e-5;
// Absolute floor for gradients that are zero up to rounding (attn.k.b:
// softmax is invariant to adding one vector to every key): their entries
// are sums of rounding errors, ~1e-12 here, far below any real gradient.
constexpr double kZeroTol = 1e-9;

/// Runs node `n` of `g` from `ctx.module` on host tensors.
std::vector<HostTensor> runNode(const Graph &g, const Node &n,
                                llvm::ArrayRef<HostTensor> inputs,
                                const LaunchContext &ctx) {
  std::vector<HostTensor> results;
  for (ValueId r : n.results)
    results.emplace_back(g.type(r));
  llvm::SmallVector<const void *, 8> ins;
  for (const HostTensor &t : inputs)
    ins.push_back(t.raw());
  llvm::SmallVector<void *, 4> outs;
  for (HostTensor &t : results)
    outs.push_back(t.raw());
  if (auto e = runCpuKernel(g, n, ins, outs, ctx)) {
    ADD_FAILURE() << toString(std::move(e));
    return {};
  }
  return results;
}

/// Runs every fused node of `fused` against its body; returns how many.
int checkEveryKernel(const Graph &fused, std::mt19937 &rng) {
  auto module = prepareFusedKernels(fused); // one library for all kernels
  if (!module) {
    ADD_FAILURE() << toString(module.takeError());
    return 0;
  }
  LaunchContext ctx;
  ctx.module = module->get();
  ctx.seed = 1234;
  ctx.step = 7;
  int count = 0;
  for (const Node &n : fused.nodes()) {
    if (n.op != OpKind::Fused)
      continue;
    ++count;
    std::vector<HostTensor> inputs;
    for (ValueId v : n.operands)
      inputs.push_back(test::randomTensor(fused.type(v), rng));
    std::vector<HostTensor> got = runNode(fused, n, inputs, ctx);
    std::vector<HostTensor> want = test::runOnCpu(*n.body, inputs, ctx);
    if (got.size() != n.results.size() || want.size() != got.size())
      return count;
    for (size_t r = 0; r < got.size(); ++r) {
      test::Diff d = test::elementDiff(got[r], want[r]);
      EXPECT_LE(d.worst, kElemTol)
          << "kernel " << n.attrs.getString("kernel") << " (" << n.scope
          << ") result %" << fused.value(n.results[r]).name << " element "
          << d.at << ": fused " << got[r].get(d.at) << ", body "
          << want[r].get(d.at);
    }
  }
  return count;
}

struct ModelCase {
  const char *name;
  pb::ModelSpec (*spec)();
};

class FusedModel : public testing::TestWithParam<ModelCase> {};

TEST_P(FusedModel, EveryKernelMatchesItsBody) {
  Graph g = test::microbatchOf(GetParam().spec());
  ASSERT_TRUE(fuseGraph(g));
  std::mt19937 rng(42);
  EXPECT_GT(checkEveryKernel(g, rng), 0);
}

TEST_P(FusedModel, LossAndGradsMatchUnfused) {
  Graph plain = test::microbatchOf(GetParam().spec());
  Graph fused = plain;
  ASSERT_TRUE(fuseGraph(fused));
  test::expectFusedMatchesPlain(plain, fused, kNormTol, kZeroTol);
}

INSTANTIATE_TEST_SUITE_P(
    Models, FusedModel,
    testing::Values(
        ModelCase{"gpt_tiny", [] { return test::exampleSpec("gpt_tiny"); }},
        ModelCase{"llama_tiny", [] { return test::exampleSpec("llama_tiny"); }},
        ModelCase{"gpt_block_dropout",
                  [] { return test::specFromText(test::kGptBlockSpec); }},
        ModelCase{"llama_block_dropout",
                  [] { return test::specFromText(test::kLlamaBlockSpec); }}),
    [](const auto &info) { return std::string(info.param.name); });

// The trainer's flag: fused programs, the same loss and gradients.
TEST(FusedTrainer, FusionFlagKeepsLossAndGrads) {
  ModelConfig cfg = resolveModelSpec(test::specFromText(test::kGptBlockSpec));
  ModelConfig evalCfg = cfg;
  evalCfg.dropout = 0;
  std::vector<std::vector<std::pair<std::string, HostTensor>>> runs;
  for (bool fusion : {false, true}) {
    TrainOptions opts;
    opts.fusion = fusion;
    auto session = TrainingSession::create(
        buildModelGraph(cfg), buildModelGraph(evalCfg), opts, ParallelConfig{});
    ASSERT_TRUE(bool(session)) << toString(session.takeError());
    Trainer *t = &(*session)->trainer();
    const PipelineStage &stage = t->compiled().pipeline.stages[0];
    for (const Graph *g : {&stage.forward, &stage.backward})
      EXPECT_EQ(
          llvm::any_of(g->nodes(),
                       [](const Node &n) { return n.op == OpKind::Fused; }),
          fusion);
    ASSERT_FALSE(bool(t->initParams()));
    std::vector<int32_t> tokens(cfg.microBatch * cfg.seq),
        labels(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = int32_t(i * 7 % cfg.vocab);
      labels[i] = int32_t((i * 7 + 3) % cfg.vocab);
    }
    auto out = t->lossAndGrads(tokens.data(), labels.data());
    ASSERT_TRUE(bool(out)) << toString(out.takeError());
    runs.push_back(std::move(*out));
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t k = 0; k < runs[0].size(); ++k) {
    const HostTensor &want = runs[0][k].second, &got = runs[1][k].second;
    double maxDiff = 0, maxRef = 0;
    for (int64_t i = 0; i < got.numElements(); ++i) {
      maxDiff = std::max(maxDiff, std::abs(got.get(i) - want.get(i)));
      maxRef = std::max(maxRef, std::abs(want.get(i)));
    }
    EXPECT_LE(maxDiff, kNormTol * maxRef + kZeroTol) << runs[0][k].first;
  }
}

// Every op with a rendering rule, in one kernel with broadcast operands of
// several patterns ([4,6,8] with [8], [6,1], [4,1,1] and a scalar), in f32
// and f64. Positive operands for log/sqrt/rsqrt come from exp.
constexpr const char *kAllRulesIR = R"(
graph @all_rules(%x: T[4,6,8], %y: T[8], %z: T[6,1], %w: T[4,1,1], %s: T[], %n: i32[4,6,8]) {
  %out, %grads, %cast = fused(%x, %y, %z, %w, %s, %n) {kernel="all_rules"} : T[4,6,8], T[4,6,8], T[4,6,8] {
    %e = exp(%x) : T[4,6,8]
    %l = log(%e) : T[4,6,8]
    %q = sqrt(%e) : T[4,6,8]
    %r = rsqrt(%e) : T[4,6,8]
    %a = add(%l, %y) : T[4,6,8]
    %b = sub(%a, %z) : T[4,6,8]
    %c = mul(%b, %w) : T[4,6,8]
    %d = div(%c, %q) : T[4,6,8]
    %mx = maximum(%d, %s) : T[4,6,8]
    %mn = minimum(%mx, %r) : T[4,6,8]
    %ng = neg(%mn) : T[4,6,8]
    %th = tanh(%ng) : T[4,6,8]
    %sg = sigmoid(%d) : T[4,6,8]
    %re = relu(%d) : T[4,6,8]
    %gt = gelu(%d) {approx="tanh"} : T[4,6,8]
    %ge = gelu(%d) {approx="none"} : T[4,6,8]
    %si = silu(%d) : T[4,6,8]
    %sq = square(%th) : T[4,6,8]
    %sc = scale(%sg) {value=-0.25} : T[4,6,8]
    %s1 = add(%sq, %sc) : T[4,6,8]
    %s2 = add(%s1, %re) : T[4,6,8]
    %s3 = add(%s2, %gt) : T[4,6,8]
    %s4 = add(%s3, %ge) : T[4,6,8]
    %out = add(%s4, %si) : T[4,6,8]
    %g1 = gelu_grad(%x, %d) {approx="tanh"} : T[4,6,8]
    %g2 = gelu_grad(%g1, %d) {approx="none"} : T[4,6,8]
    %g3 = silu_grad(%g2, %d) : T[4,6,8]
    %g4 = relu_grad(%g3, %d) : T[4,6,8]
    %g5 = dropout(%g4) {p=0.25, stream=5} : T[4,6,8]
    %grads = dropout_grad(%g5) {p=0.5, stream=6} : T[4,6,8]
    %cast = cast(%n) {dtype="T"} : T[4,6,8]
    return %out, %grads, %cast
  }
  return %out, %grads, %cast
}
)";

class AllRules : public testing::TestWithParam<const char *> {};

TEST_P(AllRules, MatchTheReferenceKernels) {
  std::string text = test::withDType(kAllRulesIR, GetParam());
  auto g = parseGraph(text, "all_rules");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  const Node &fused = g->nodes().front();
  for (int k = 0; k < kNumOps; ++k) {
    if (!codegen::hasRenderRule(OpKind(k)))
      continue;
    EXPECT_TRUE(llvm::any_of(fused.body->nodes(),
                             [&](const Node &n) { return int(n.op) == k; }))
        << opName(OpKind(k)).str() << " has a rendering rule but no case here";
  }
  std::mt19937 rng(3);
  EXPECT_EQ(checkEveryKernel(*g, rng), 1);
}

INSTANTIATE_TEST_SUITE_P(DTypes, AllRules, testing::Values("f32", "f64"));

// Every row op with a prologue and an epilogue (test::kRowOpsIR), through
// the fusion pass, in f32 and f64. Each fused kernel must match its body run
// by the reference kernels (row statistics in f64 in both), and the results
// must be bitwise the same with 1 and 3 threads.

class RowOps : public testing::TestWithParam<const char *> {};

TEST_P(RowOps, FusedKernelsMatchTheReferenceKernels) {
  std::string text = test::withDType(test::kRowOpsIR, GetParam());
  auto g = parseGraph(text, "row_ops");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  Graph plain = *g;
  ASSERT_TRUE(fuseGraph(*g));
  // Every row op leads a kernel (none is left as a plain node).
  for (const Node &n : g->nodes())
    EXPECT_FALSE(rowOpOperands(n.op))
        << opName(n.op).str() << " was not fused:\n"
        << graphToString(*g);
  int threads = kernels::getNumThreads();
  std::vector<std::vector<HostTensor>> runs;
  for (int n : {1, 3}) {
    kernels::setNumThreads(n);
    std::mt19937 rng(17);
    EXPECT_EQ(checkEveryKernel(*g, rng), 6) << n << " threads";
    std::mt19937 same(17);
    std::vector<HostTensor> inputs;
    for (ValueId v : g->inputs())
      inputs.push_back(test::randomTensor(g->type(v), same));
    LaunchContext ctx;
    ctx.seed = 5;
    runs.push_back(test::runOnCpu(*g, inputs, ctx));
  }
  kernels::setNumThreads(threads);
  ASSERT_EQ(runs[0].size(), plain.outputs().size());
  ASSERT_EQ(runs[1].size(), runs[0].size());
  for (size_t r = 0; r < runs[0].size(); ++r)
    EXPECT_EQ(
        std::memcmp(runs[0][r].raw(), runs[1][r].raw(), runs[0][r].bytes()), 0)
        << "result " << r << " differs between 1 and 3 threads";
}

INSTANTIATE_TEST_SUITE_P(DTypes, RowOps, testing::Values("f32", "f64"));

// Threads take contiguous element ranges that start and end inside rows:
// 3 threads over 5 rows of 30011 split at elements 50019 and 100038.
TEST(FusedCpu, ThreadRangesSplitRows) {
  auto g = parseGraph(R"(
graph @rows(%x: f32[5,30011], %b: f32[30011], %s: f32[5,1]) {
  %y = fused(%x, %b, %s) {kernel="rows"} : f32[5,30011] {
    %a = add(%x, %b) : f32[5,30011]
    %y = mul(%a, %s) : f32[5,30011]
    return %y
  }
  return %y
}
)",
                      "rows");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  int threads = kernels::getNumThreads();
  kernels::setNumThreads(3);
  std::mt19937 rng(5);
  EXPECT_EQ(checkEveryKernel(*g, rng), 1);
  kernels::setNumThreads(threads);
}

// Column sums (bias gradients) over 300 rows of 130: blocks of 63 rows
// (runtime/cpu/FusedKernels.cpp), so 5 partial rows, in f32 and f64; the
// sums must be bitwise the same with 1 and 3 threads (the blocks, not the
// threads, fix the summation order).
TEST(FusedCpu, ColumnSumsMatchReduceSumAtAnyThreadCount) {
  for (const char *t : {"f32", "f64"}) {
    std::string text = R"(
graph @sums(%x: T[3,100,130], %b: T[130]) {
  %g, %db, %dx = fused(%x, %b) {kernel="sums"} : T[3,100,130], T[130], T[130] {
    %a = add(%x, %b) : T[3,100,130]
    %g = gelu_grad(%x, %a) {approx="tanh"} : T[3,100,130]
    %db = reduce_sum(%g) {axes=[0, 1]} : T[130]
    %dx = reduce_sum(%x) {axes=[0, 1]} : T[130]
    return %g, %db, %dx
  }
  return %g, %db, %dx
}
)";
    text = test::withDType(text, t);
    auto g = parseGraph(text, "sums");
    ASSERT_TRUE(bool(g)) << toString(g.takeError());
    int threads = kernels::getNumThreads();
    std::vector<std::vector<HostTensor>> runs;
    for (int n : {1, 3}) {
      kernels::setNumThreads(n);
      std::mt19937 rng(11);
      EXPECT_EQ(checkEveryKernel(*g, rng), 1) << t << ", " << n << " threads";
      std::mt19937 same(11);
      std::vector<HostTensor> inputs;
      for (ValueId v : g->nodes().front().operands)
        inputs.push_back(test::randomTensor(g->type(v), same));
      runs.push_back(test::runOnCpu(*g, inputs, LaunchContext{}));
    }
    kernels::setNumThreads(threads);
    ASSERT_EQ(runs[0].size(), 3u);
    ASSERT_EQ(runs[1].size(), 3u);
    for (size_t r = 0; r < 3; ++r)
      EXPECT_EQ(
          std::memcmp(runs[0][r].raw(), runs[1][r].raw(), runs[0][r].bytes()),
          0)
          << t << " result " << r << " differs between 1 and 3 threads";
  }
}

} // namespace
} // namespace strata
