//===- ParserTest.cpp - Parser errors point at the right place ------------===//
//
// Each case is a malformed graph with the exact `line:col` of the error and a
// fragment of its message. Semantic errors name the input or node.
//
//===----------------------------------------------------------------------===//
#include "ir/IRText.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

struct BadInput {
  const char *name;
  const char *text;
  const char *where;   // "line:col"
  const char *message; // a fragment of the message
};

const BadInput kBadInputs[] = {
    {"MissingGraphKeyword", "grph @g() {\n  return\n}\n", "1:1",
     "expected 'graph' (got 'grph')"},
    {"MissingGraphSigil", "graph g() {\n  return\n}\n", "1:7",
     "expected graph name '@name' (got 'g')"},
    {"UnknownOp",
     "graph @g(%x: f32[2]) {\n  %y = negate(%x) : f32[2]\n  return %y\n}\n",
     "2:8", "%y = negate: unknown op 'negate'"},
    {"UndefinedOperand",
     "graph @g(%x: f32[2]) {\n  %y = neg(%z) : f32[2]\n  return %y\n}\n",
     "2:12", "%y = neg: use of undefined value %z"},
    {"UseBeforeDefinition",
     "graph @g(%x: f32[2]) {\n  %y = add(%x, %z) : f32[2]\n"
     "  %z = neg(%x) : f32[2]\n  return %y\n}\n",
     "2:16", "%y = add: use of undefined value %z"},
    {"RedefinedValue",
     "graph @g(%x: f32[2]) {\n  %x = neg(%x) : f32[2]\n  return %x\n}\n", "2:3",
     "%x = neg: redefinition of %x (first defined at 1:10)"},
    {"DuplicateInput", "graph @g(%x: f32[2], %x: f32[3]) {\n  return\n}\n",
     "1:22", "input %x: redefinition of %x"},
    {"ResultTypeMismatch",
     "graph @g(%x: f32[2,3], %w: f32[3,4]) {\n"
     "  %y = matmul(%x, %w) : f32[2,3]\n  return %y\n}\n",
     "2:25",
     "%y = matmul: result type f32[2,3] does not match the inferred "
     "type f32[2,4]"},
    {"UnknownDType", "graph @g(%x: f33[2]) {\n  return %x\n}\n", "1:14",
     "input %x: unknown dtype 'f33'"},
    {"NonPositiveDim", "graph @g(%x: f32[2,0]) {\n  return %x\n}\n", "1:20",
     "input %x: dimension sizes must be positive (got 0)"},
    {"UnknownMeshAxisInResult",
     "graph @g mesh<dp=2>(%x: f32[4]) {\n"
     "  %y = neg(%x) : f32[4] {shard=[tp]}\n  return %y\n}\n",
     "2:33", "%y = neg: unknown mesh axis 'tp' (the graph has mesh<dp=2>)"},
    {"ShardingWithoutMesh",
     "graph @g(%x: f32[4] {shard=[dp]}) {\n  return %x\n}\n", "1:29",
     "input %x: sharding uses mesh axis 'dp' but the graph has no mesh"},
    {"ShardingRank",
     "graph @g mesh<dp=2>(%x: f32[4,4] {shard=[dp]}) {\n  return %x\n}\n",
     "1:35", "input %x: sharding has 1 dims but the type f32[4,4] has rank 2"},
    {"ShardNotDivisible",
     "graph @g mesh<dp=2,tp=2>(%x: f32[6] {shard=[dp*tp]}) {\n  return %x\n}\n",
     "1:38", "dim 0 of size 6 is not divisible by its 4 shards"},
    {"WrongOperandCount",
     "graph @g(%x: f32[2]) {\n  %y = neg(%x, %x) : f32[2]\n  return %y\n}\n",
     "2:8", "%y = neg: neg takes 1 operands, got 2"},
    {"MissingResultTypes",
     "graph @g(%x: f32[2]) {\n  %y = neg(%x)\n  return %y\n}\n", "3:3",
     "expected ':' (got 'return')"},
    {"TooFewResultTypes",
     "graph @g(%dy: f32[2,4], %x: f32[2,4], %w: f32[4]) {\n"
     "  %dx, %dw = rms_norm_grad(%dy, %x, %w) {eps=1e-05} : f32[2,4]\n"
     "  return %dx\n}\n",
     "2:53", "%dx, %dw = rms_norm_grad: expected 2 result types (got 1)"},
    {"NameOnZeroResultOp",
     "graph @g(%x: f32[2]) {\n  %y = send(%x) {peer=1} : f32[2]\n  return\n}\n",
     "2:8", "%y = send: send has 0 result(s), got 1 name(s)"},
    {"BadAttributeValue",
     "graph @g(%x: f32[2]) {\n  %y = scale(%x) {value=} : f32[2]\n  return "
     "%y\n}\n",
     "2:25", "expected an attribute value (got '}')"},
    {"AttributeOfWrongKind",
     "graph @g(%x: f32[2,2]) {\n"
     "  %y = matmul(%x, %x) {transpose_a=\"yes\"} : f32[2,2]\n  return %y\n}\n",
     "2:23",
     "%y = matmul: attribute 'transpose_a' must be a bool (got \"yes\")"},
    {"DuplicateAttribute",
     "graph @g(%x: f32[2]) {\n  %y = scale(%x) {value=1.0, value=2.0} : "
     "f32[2]\n"
     "  return %y\n}\n",
     "2:30", "duplicate attribute 'value'"},
    {"UnterminatedString",
     "graph @g(%x: f32[2]) {\n  %y = gelu(%x) {approx=\"tanh} : f32[2]\n"
     "  return %y\n}\n",
     "2:25", "unterminated string"},
    {"BadEscape",
     "graph @g(%x: f32[2]) {\n  %y = gelu(%x) {approx=\"t\\anh\"} : f32[2]\n"
     "  return %y\n}\n",
     "2:27", "unknown escape '\\a' in string"},
    {"IntegerOutOfRange",
     "graph @g(%x: f32[2]) {\n  send(%x) {peer=99999999999999999999}\n  "
     "return\n}\n",
     "2:18", "integer 99999999999999999999 is out of range"},
    {"DuplicateMeshAxis", "graph @g mesh<dp=2,dp=4>() {\n  return\n}\n", "1:20",
     "mesh axis 'dp' appears twice"},
    {"ZeroMeshAxis", "graph @g mesh<dp=0>() {\n  return\n}\n", "1:18",
     "mesh axis 'dp' must have size >= 1 (got 0)"},
    {"CommentAfterHeader", "graph @g() {  # not a scope\n  return\n}\n", "1:15",
     "expected a node or 'return' (got comment '# not a scope')"},
    {"UndefinedOutput", "graph @g(%x: f32[2]) {\n  return %x, %y\n}\n", "2:14",
     "return: use of undefined value %y"},
    {"MissingClosingBrace", "graph @g(%x: f32[2]) {\n  return %x\n", "3:1",
     "expected '}' (got end of file)"},
    {"TextAfterGraph", "graph @g() {\n  return\n}\ngraph @h() {\n", "4:1",
     "expected end of file (got 'graph')"},
    {"StrayCharacter", "graph @g(%x: f32[2]) {\n  %y = neg(%x) ; f32[2]\n",
     "2:16", "unexpected character ';'"},
};

class ParserErrors : public testing::TestWithParam<BadInput> {};

TEST_P(ParserErrors, ReportLineColumnAndMessage) {
  const BadInput &c = GetParam();
  auto g = parseGraph(c.text, "bad.ir");
  ASSERT_FALSE(bool(g)) << "parsed: " << c.text;
  std::string msg = toString(g.takeError());
  std::string prefix = std::string("bad.ir:") + c.where + ": error: ";
  EXPECT_EQ(msg.substr(0, prefix.size()), prefix) << msg;
  EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Parser, ParserErrors, testing::ValuesIn(kBadInputs),
                         [](const testing::TestParamInfo<BadInput> &info) {
                           return std::string(info.param.name);
                         });

TEST(Parser, CommentLinesAreSkippedAndTrailingCommentsAreScopes) {
  auto g = parseGraph("# RUN: strata-opt %s\n"
                      "graph @g(%x: f32[2]) {\n"
                      "  # CHECK: neg\n"
                      "  %y = neg(%x) : f32[2]   #   blk.0.act   \n"
                      "  return %y\n"
                      "}\n");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  EXPECT_EQ(g->node(0).scope, "blk.0.act");
}

TEST(Parser, ReadsEveryAttributeKind) {
  auto g =
      parseGraph("graph @g() {\n"
                 "  %y = fill() {b=true, e=[], f=-2.5e-3, i=-7, l=[1, -2], "
                 "s=\"a\\\"b\\\\c\\n\", shape=[2], sl=[\"x\", \"y\"], "
                 "value=inf} : f32[2]\n"
                 "  return %y\n}\n");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  const Attrs &a = g->node(0).attrs;
  EXPECT_TRUE(a.getBool("b"));
  EXPECT_EQ(*a.get("e"), AttrValue(IntList{}));
  EXPECT_EQ(a.getFloat("f"), -2.5e-3);
  EXPECT_EQ(a.getInt("i"), -7);
  EXPECT_EQ(a.getInts("l"), (IntList{1, -2}));
  EXPECT_EQ(a.getString("s"), "a\"b\\c\n");
  EXPECT_EQ(a.getStrings("sl"), (StrList{"x", "y"}));
  EXPECT_TRUE(std::isinf(a.getFloat("value")));
}

TEST(Parser, InputAttributesAndShardings) {
  auto g = parseGraph("graph @g mesh<pp=2,dp=2,tp=2>(%w: f32[8,4] {param, "
                      "init=\"normal\", std=0.02, frozen=false, "
                      "shard=[tp*dp,_], partial=[pp]}) {\n  return %w\n}\n");
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  const Value &w = g->value(g->inputs()[0]);
  EXPECT_TRUE(w.isParam());
  EXPECT_FALSE(w.attrs.getBool("frozen", true));
  EXPECT_EQ(w.attrs.getString("init"), "normal");
  EXPECT_EQ(w.attrs.getFloat("std"), 0.02);
  ASSERT_TRUE(w.sharding.has_value());
  EXPECT_EQ(w.sharding->dims[0],
            (llvm::SmallVector<std::string, 1>{"tp", "dp"}));
  EXPECT_TRUE(w.sharding->dims[1].empty());
  EXPECT_EQ(w.sharding->partial, (llvm::SmallVector<std::string, 1>{"pp"}));
  EXPECT_EQ(g->mesh->numDevices(), 8);
}

} // namespace
