//===- VerifierTest.cpp - The verifier catches broken graphs
//---------------===//
//
// Graphs built through the Graph API (which does not check) with one broken
// invariant each; the message must name the node (or input) and say what.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

const TensorType kF32x4{DType::F32, {4}};
const TensorType kF32x4x6{DType::F32, {4, 6}};

// `%x: f32[4,6]` on mesh<dp=2,tp=3>.
Graph base() {
  Graph g;
  g.name = "g";
  g.mesh = Mesh{{{"dp", 2}, {"tp", 3}}};
  g.addInput("x", kF32x4x6);
  return g;
}

std::string verifyError(const Graph &g) {
  llvm::Error e = verifyGraph(g);
  return e ? toString(std::move(e)) : "no error";
}

TEST(Verifier, AcceptsAValidGraph) {
  Graph g = base();
  int32_t n = g.addNode(OpKind::Neg, {0}, {kF32x4x6}, {}, "blk", {"y"});
  Sharding s = Sharding::replicated(2);
  s.dims[0] = {"dp"};
  s.dims[1] = {"tp"};
  g.value(g.node(n).results[0]).sharding = s;
  g.addOutput(g.node(n).results[0]);
  EXPECT_EQ(verifyError(g), "no error");
}

TEST(Verifier, UseBeforeDefinition) {
  Graph g = base();
  // %a uses %b (value 2), which the next node defines.
  g.addNode(OpKind::Neg, {2}, {kF32x4x6}, {}, "blk.0", {"a"});
  g.addNode(OpKind::Neg, {0}, {kF32x4x6}, {}, "blk.1", {"b"});
  EXPECT_EQ(verifyError(g),
            "%a = neg (blk.0): operand 0 (%b) is used before it is defined");
}

TEST(Verifier, OperandOutsideTheGraph) {
  Graph g = base();
  g.addNode(OpKind::Neg, {42}, {kF32x4x6}, {}, "", {"a"});
  EXPECT_EQ(verifyError(g), "%a = neg: operand 0 is not a value of the graph");
}

TEST(Verifier, ResultTypeMismatch) {
  Graph g = base();
  g.addNode(OpKind::Reshape, {0}, {TensorType{DType::F32, {6, 4}}},
            {{"shape", IntList{24}}}, "mlp.view", {"r"});
  EXPECT_EQ(verifyError(g), "%r = reshape (mlp.view): result %r has type "
                            "f32[6,4] but shape inference gives f32[24]");
}

TEST(Verifier, ShapeInferenceFailure) {
  Graph g = base();
  g.addInput("w", TensorType{DType::F32, {5, 2}});
  g.addNode(OpKind::MatMul, {0, 1}, {kF32x4}, {}, "", {"h"});
  EXPECT_EQ(verifyError(g), "%h = matmul: contraction dims differ: f32[4,6] "
                            "and f32[5,2]");
}

TEST(Verifier, OperandCount) {
  Graph g = base();
  g.addNode(OpKind::Add, {0}, {kF32x4x6}, {}, "", {"s"});
  EXPECT_EQ(verifyError(g), "%s = add: add takes 2 operands, got 1");
}

TEST(Verifier, ResultCount) {
  Graph g = base();
  g.addNode(OpKind::Send, {0}, {kF32x4x6}, {{"peer", int64_t(1)}}, "", {"s"});
  EXPECT_EQ(verifyError(g), "%s = send: has 1 results, the op has 0");
}

TEST(Verifier, AttributeKind) {
  Graph g = base();
  g.addNode(OpKind::Send, {0}, {}, {{"peer", std::string("one")}}, "pp", {});
  EXPECT_EQ(verifyError(g),
            "send(%x) (pp): attribute 'peer' must be an int (got \"one\")");
}

TEST(Verifier, ShardingRank) {
  Graph g = base();
  g.value(0).sharding = Sharding::replicated(3);
  EXPECT_EQ(verifyError(g), "input %x: sharding has 3 dims but the type "
                            "f32[4,6] has rank 2");
}

TEST(Verifier, ShardingUnknownAxis) {
  Graph g = base();
  int32_t n = g.addNode(OpKind::Neg, {0}, {kF32x4x6}, {}, "act", {"y"});
  Sharding s = Sharding::replicated(2);
  s.partial = {"pp"};
  g.value(g.node(n).results[0]).sharding = s;
  EXPECT_EQ(verifyError(g),
            "%y = neg (act): result %y: unknown mesh axis 'pp'");
}

TEST(Verifier, ShardingAxisUsedTwice) {
  Graph g = base();
  Sharding s = Sharding::replicated(2);
  s.dims[0] = {"dp"};
  s.partial = {"dp"};
  g.value(0).sharding = s;
  EXPECT_EQ(verifyError(g),
            "input %x: mesh axis 'dp' is used twice in one sharding");
}

TEST(Verifier, ShardingNotDivisible) {
  Graph g = base();
  Sharding s = Sharding::replicated(2);
  s.dims[0] = {"tp"};
  g.value(0).sharding = s;
  EXPECT_EQ(verifyError(g),
            "input %x: dim 0 of size 4 is not divisible by its 3 shards");
}

TEST(Verifier, ShardingWithoutMesh) {
  Graph g = base();
  g.mesh.reset();
  Sharding s = Sharding::replicated(2);
  s.dims[1] = {"tp"};
  g.value(0).sharding = s;
  EXPECT_EQ(verifyError(g), "input %x: sharding uses mesh axis 'tp' but the "
                            "graph has no mesh");
}

TEST(Verifier, DuplicateNames) {
  Graph g = base();
  int32_t n = g.addNode(OpKind::Neg, {0}, {kF32x4x6}, {}, "", {"y"});
  g.value(g.node(n).results[0]).name = "x"; // bypasses Graph's name map
  EXPECT_EQ(verifyError(g), "%x = neg: value name %x is defined twice");
}

TEST(Verifier, UnprintableNames) {
  Graph g = base();
  g.addInput("has space", kF32x4);
  EXPECT_EQ(verifyError(g), "value name 'has space' is not printable (use "
                            "letters, digits, '_' and '.')");
  g.name = "";
  EXPECT_EQ(verifyError(g), "graph name '' is not printable (use letters, "
                            "digits, '_' and '.')");
}

TEST(Verifier, ScopeMustPrintOnOneLine) {
  Graph g = base();
  g.addNode(OpKind::Neg, {0}, {kF32x4x6}, {}, "a\nb", {"y"});
  EXPECT_NE(verifyError(g).find("scope has a newline"), std::string::npos);
}

TEST(Verifier, InvalidOutput) {
  Graph g = base();
  g.addOutput(0);
  g.addOutput(7);
  EXPECT_EQ(verifyError(g),
            "output 1 is not an input or a node result of the graph");
}

TEST(Verifier, InputAttributeKind) {
  Graph g = base();
  g.addInput("w", kF32x4, {{"param", int64_t(1)}});
  EXPECT_EQ(verifyError(g),
            "input %w: attribute 'param' must be a bool (got 1)");
}

TEST(Verifier, ShardingNamesAreReservedOnInputs) {
  Graph g = base();
  g.addInput("w", kF32x4, {{"shard", int64_t(1)}});
  EXPECT_EQ(verifyError(g), "input %w: attribute name 'shard' is reserved "
                            "for the input's sharding");
}

TEST(Verifier, MeshAxes) {
  Graph g = base();
  g.mesh = Mesh{{{"dp", 2}, {"dp", 2}}};
  EXPECT_EQ(verifyError(g), "mesh axis 'dp' appears twice");
  g.mesh = Mesh{{{"tp", 0}}};
  EXPECT_EQ(verifyError(g), "mesh axis 'tp' has size 0 (must be >= 1)");
}

} // namespace
