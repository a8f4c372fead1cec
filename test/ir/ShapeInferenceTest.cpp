//===- ShapeInferenceTest.cpp - Shape errors reach the user
//----------------===//
//
// The parser runs shape inference on every node; an op whose operands or
// attributes break its rules is reported at the op, with the op's reason.
//
//===----------------------------------------------------------------------===//
#include "ir/IRText.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

struct BadNode {
  const char *name;
  const char *header; // `graph @g` + this + ` {`
  const char *node;   // written after `  %y = `
  const char *message;
};

const BadNode kBadNodes[] = {
    {"MatMulContraction", "(%a: f32[2,3], %b: f32[4,5])",
     "matmul(%a, %b) : f32[2,5]",
     "contraction dims differ: f32[2,3] and f32[4,5]"},
    {"MatMulBatch", "(%a: f32[2,3,4], %b: f32[3,4,5])",
     "matmul(%a, %b) : f32[2,3,5]", "batch dims differ"},
    {"BinaryDTypes", "(%a: f32[2], %b: bf16[2])", "add(%a, %b) : f32[2]",
     "operand dtypes differ: f32[2] and bf16[2]"},
    {"BinaryBroadcast", "(%a: f32[2,3], %b: f32[4])", "mul(%a, %b) : f32[2,3]",
     "shapes [2,3] and [4] do not broadcast"},
    {"UnaryOnInts", "(%a: i32[2])", "exp(%a) : i32[2]",
     "operand must be a float tensor"},
    {"ReshapeCount", "(%a: f32[2,3])", "reshape(%a) {shape=[4,2]} : f32[4,2]",
     "reshape from [2,3] to [4,2] changes the element count"},
    {"TransposePerm", "(%a: f32[2,3])", "transpose(%a) {perm=[0,0]} : f32[2,3]",
     "'perm' is not a permutation"},
    {"BroadcastShape", "(%a: f32[3])", "broadcast(%a) {shape=[2,4]} : f32[2,4]",
     "cannot broadcast [3] to [2,4]"},
    {"SliceBounds", "(%a: f32[8])",
     "slice(%a) {dim=0, size=4, start=6} : f32[4]",
     "slice [6, 10) out of bounds of dim size 8"},
    {"ConcatShapes", "(%a: f32[2,3], %b: f32[4,4])",
     "concat(%a, %b) {dim=0} : f32[6,3]",
     "concat operands differ outside the concat dim"},
    {"ReduceAxis", "(%a: f32[2,3])", "reduce_sum(%a) {axes=[2]} : f32[2]",
     "reduction axis 2 out of range for rank 2"},
    {"GatherIds", "(%t: f32[8,4], %i: f32[2])", "gather(%t, %i) : f32[2,4]",
     "gather ids must be i32 or i64"},
    {"LayerNormWeight", "(%x: f32[2,8], %w: f32[4], %b: f32[8])",
     "layer_norm(%x, %w, %b) {eps=1e-05} : f32[2,8]",
     "norm weight/bias must be f32[8], got f32[4]"},
    {"AttentionHeads", "(%q: f32[1,4,3,8], %k: f32[1,4,2,8], %v: f32[1,4,2,8])",
     "attention(%q, %k, %v) : f32[1,4,3,8]",
     "query heads 3 not a multiple of kv heads 2"},
    {"RopeOddDim", "(%x: f32[1,4,2,7])", "rope(%x) : f32[1,4,2,7]",
     "rope wants x[B,S,H,D] with even D"},
    {"DropoutP", "(%x: f32[4])", "dropout(%x) {p=1.0} : f32[4]",
     "dropout 'p' must be in [0, 1)"},
    {"CrossEntropyLabels", "(%l: f32[2,3,8], %t: i32[2,4])",
     "cross_entropy(%l, %t) : f32[]",
     "logits f32[2,3,8] do not match labels i32[2,4]"},
    {"ScatterAddRows", "(%d: f32[2,4], %i: i32[2])",
     "scatter_add(%d, %i) : f32[1,4]", "scatter_add needs a positive 'rows'"},
    {"CollectiveWithoutMesh", "(%x: f32[4])",
     "all_reduce(%x) {axes=[\"tp\"]} : f32[4]",
     "collective over axes needs a graph mesh"},
    {"CollectiveUnknownAxis", " mesh<dp=2>(%x: f32[4])",
     "all_gather(%x) {axes=[\"tp\"], dim=0} : f32[8]", "mesh has no axis 'tp'"},
    {"CollectiveNoAxes", " mesh<dp=2>(%x: f32[4])", "all_reduce(%x) : f32[4]",
     "collective needs a non-empty 'axes' attribute"},
    {"ReduceScatterDivisible", " mesh<dp=4>(%x: f32[6])",
     "reduce_scatter(%x) {axes=[\"dp\"], dim=0} : f32[2]",
     "dim size 6 not divisible by group size 4"},
    {"CastDType", "(%x: f32[4])", "cast(%x) {dtype=\"f8\"} : f32[4]",
     "cast needs a valid 'dtype' attribute"},
};

class ShapeInferenceErrors : public testing::TestWithParam<BadNode> {};

TEST_P(ShapeInferenceErrors, AreReportedAtTheOp) {
  const BadNode &c = GetParam();
  std::string text = std::string("graph @g") + c.header +
                     " {\n  %y = " + c.node + "\n  return %y\n}\n";
  auto g = parseGraph(text, "shape.ir");
  ASSERT_FALSE(bool(g)) << text;
  std::string msg = toString(g.takeError());
  std::string op = llvm::StringRef(c.node).split('(').first.str();
  std::string prefix = "shape.ir:2:8: error: %y = " + op + ": ";
  EXPECT_EQ(msg.substr(0, prefix.size()), prefix) << msg;
  EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Ops, ShapeInferenceErrors,
                         testing::ValuesIn(kBadNodes),
                         [](const testing::TestParamInfo<BadNode> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
