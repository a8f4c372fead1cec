//===- AutodiffTest.cpp - Structure, naming and errors of autodiff
//---------===//
//
// IR text in, the pass, IR text out. The numerics of every rule are checked in
// GradCheckTest.cpp; the per-op backward IR in test/lit/autodiff.
//
//===----------------------------------------------------------------------===//
#include "passes/autodiff/Autodiff.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include "gtest/gtest.h"

namespace strata {
namespace {

Graph parse(llvm::StringRef text) {
  auto g = parseGraph(text);
  if (!g) {
    ADD_FAILURE() << llvm::toString(g.takeError());
    return Graph();
  }
  return std::move(*g);
}

/// Runs the pass; returns the printed result or the error text.
std::string differentiated(llvm::StringRef text) {
  Graph g = parse(text);
  if (llvm::Error e = differentiate(g))
    return "error: " + llvm::toString(std::move(e));
  if (llvm::Error e = verifyGraph(g))
    return "invalid: " + llvm::toString(std::move(e));
  return graphToString(g);
}

constexpr llvm::StringLiteral kMlp =
    R"(graph @mlp(%x: f32[4,8], %w: f32[8,16] {param}, %b: f32[16] {param}) {
  %h = matmul(%x, %w) : f32[4,16]  # fc
  %hb = add(%h, %b) : f32[4,16]  # fc
  %a = gelu(%hb) {approx="tanh"} : f32[4,16]  # act
  %loss = reduce_mean(%a) : f32[]  # loss
  return %loss
}
)";

// The whole output: forward unchanged, then the backward nodes with scopes,
// the bwd marker and readable names; x (data) gets no adjoint.
TEST(Autodiff, MlpBackwardText) {
  EXPECT_EQ(
      differentiated(kMlp),
      R"(graph @mlp(%x: f32[4,8], %w: f32[8,16] {param}, %b: f32[16] {param}) {
  %h = matmul(%x, %w) : f32[4,16]  # fc
  %hb = add(%h, %b) : f32[4,16]  # fc
  %a = gelu(%hb) {approx="tanh"} : f32[4,16]  # act
  %loss = reduce_mean(%a) : f32[]  # loss
  %d.loss = fill() {bwd=true, dtype="f32", shape=[], value=1.0} : f32[]  # loss
  %loss.bwd.scale = scale(%d.loss) {bwd=true, value=0.015625} : f32[]  # loss
  %d.a = broadcast(%loss.bwd.scale) {bwd=true, shape=[4, 16]} : f32[4,16]  # loss
  %d.hb = gelu_grad(%d.a, %hb) {approx="tanh", bwd=true} : f32[4,16]  # act
  %grad.b = reduce_sum(%d.hb) {axes=[0], bwd=true} : f32[16]  # fc
  %grad.w = matmul(%x, %d.hb) {bwd=true, transpose_a=true} : f32[8,16]  # fc
  return %loss, %grad.w, %grad.b
}
)");
}

TEST(Autodiff, EveryNewNodeIsMarkedBackward) {
  Graph g = parse(kMlp);
  size_t numForward = g.nodes().size();
  ASSERT_FALSE(bool(differentiate(g)));
  for (size_t n = 0; n < g.nodes().size(); ++n)
    EXPECT_EQ(isBackward(g.node(int32_t(n))), n >= numForward) << n;
}

// Residual: x is used twice, so its adjoint is the sum of two contributions.
TEST(Autodiff, SumsContributions) {
  EXPECT_EQ(differentiated(R"(graph @res(%x: f32[2,3] {param}) {
  %t = tanh(%x) : f32[2,3]  # act
  %y = add(%x, %t) : f32[2,3]  # res
  %loss = reduce_sum(%y) : f32[]  # loss
  return %loss
}
)"),
            R"(graph @res(%x: f32[2,3] {param}) {
  %t = tanh(%x) : f32[2,3]  # act
  %y = add(%x, %t) : f32[2,3]  # res
  %loss = reduce_sum(%y) : f32[]  # loss
  %d.loss = fill() {bwd=true, dtype="f32", shape=[], value=1.0} : f32[]  # loss
  %d.y = broadcast(%d.loss) {bwd=true, shape=[2, 3]} : f32[2,3]  # loss
  %t.bwd.square = square(%t) {bwd=true} : f32[2,3]  # act
  %t.bwd.mul = mul(%d.y, %t.bwd.square) {bwd=true} : f32[2,3]  # act
  %d.x.1 = sub(%d.y, %t.bwd.mul) {bwd=true} : f32[2,3]  # act
  %grad.x = add(%d.y, %d.x.1) {bwd=true} : f32[2,3]  # act
  return %loss, %grad.x
}
)");
}

// Both params' adjoints alias dy of the add: the first takes the name, the
// second gets a copy so that every gradient output is named grad.<p>.
TEST(Autodiff, AliasedGradientsStillGetTheirNames) {
  Graph g = parse(R"(graph @alias(%p: f32[3] {param}, %q: f32[3] {param}) {
  %y = add(%p, %q) : f32[3]  # add
  %loss = reduce_sum(%y) : f32[]  # loss
  return %loss
}
)");
  ASSERT_FALSE(bool(differentiate(g)));
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.value(g.outputs()[1]).name, "grad.p");
  EXPECT_EQ(g.value(g.outputs()[2]).name, "grad.q");
  EXPECT_FALSE(bool(verifyGraph(g)));
}

TEST(Autodiff, UnusedParamGetsZeroGradient) {
  std::string out = differentiated(
      R"(graph @unused(%p: f32[3] {param}, %u: f32[2,2] {param}) {
  %loss = reduce_sum(%p) : f32[]  # loss
  return %loss
}
)");
  EXPECT_NE(out.find("%grad.u = fill() {bwd=true, dtype=\"f32\", shape=[2, 2], "
                     "value=0.0} : f32[2,2]\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("return %loss, %grad.p, %grad.u"), std::string::npos)
      << out;
}

// Errors leave the graph as it was.
void expectError(llvm::StringRef text, llvm::StringRef message) {
  Graph g = parse(text);
  std::string before = graphToString(g);
  llvm::Error e = differentiate(g);
  ASSERT_TRUE(bool(e));
  std::string got = llvm::toString(std::move(e));
  EXPECT_NE(got.find(message.str()), std::string::npos) << got;
  EXPECT_EQ(graphToString(g), before);
}

TEST(Autodiff, RejectsNonScalarLoss) {
  expectError(R"(graph @g(%p: f32[3] {param}) {
  %y = tanh(%p) : f32[3]
  return %y
}
)",
              "the loss %y must be a scalar float, got f32[3]");
}

TEST(Autodiff, RejectsSeveralOutputs) {
  expectError(R"(graph @g(%p: f32[] {param}) {
  %y = tanh(%p) : f32[]
  return %y, %p
}
)",
              "expected one graph output, the scalar loss, got 2");
}

TEST(Autodiff, RejectsGradOpBetweenParamAndLoss) {
  expectError(R"(graph @g(%p: f32[3] {param}, %x: f32[3]) {
  %y = gelu_grad(%x, %p) {approx="tanh"} : f32[3]  # act
  %loss = reduce_sum(%y) : f32[]
  return %loss
}
)",
              "no gradient rule for gelu_grad (%y in scope 'act' "
              "lies between a param and the loss");
}

TEST(Autodiff, RejectsCollectiveBetweenParamAndLoss) {
  expectError(R"(graph @g mesh<tp=2>(%p: f32[3] {param}) {
  %y = all_reduce(%p) {axes=["tp"]} : f32[3]  # tp
  %loss = reduce_sum(%y) : f32[]
  return %loss
}
)",
              "no gradient rule for all_reduce");
}

// A grad op on a data-only branch is never differentiated.
TEST(Autodiff, IgnoresGradOpsOffTheParamPath) {
  std::string out = differentiated(R"(graph @g(%p: f32[3] {param}, %x: f32[3]) {
  %c = relu_grad(%x, %x) : f32[3]
  %y = mul(%p, %c) : f32[3]
  %loss = reduce_sum(%y) : f32[]
  return %loss
}
)");
  EXPECT_NE(out.find("%grad.p = mul(%d.y, %c) {bwd=true}"), std::string::npos)
      << out;
}

TEST(Autodiff, RejectsDifferentiatedGraph) {
  Graph g = parse(kMlp);
  ASSERT_FALSE(bool(differentiate(g)));
  g.setOutputs({g.outputs()[0]}); // back to one scalar output
  llvm::Error e = differentiate(g);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("already differentiated"),
            std::string::npos);
}

TEST(Autodiff, RegisteredAsAPass) {
  registerAllPasses();
  const PassInfo *info = lookupPass("autodiff");
  ASSERT_NE(info, nullptr);
  auto bad = info->create({{"mode", "x"}});
  ASSERT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
  auto pass = info->create({});
  ASSERT_TRUE(bool(pass)) << llvm::toString(pass.takeError());
  Graph g = parse(kMlp);
  auto changed = (*pass)->run(g);
  ASSERT_TRUE(bool(changed)) << llvm::toString(changed.takeError());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(g.outputs().size(), 3u);
}

} // namespace
} // namespace strata
