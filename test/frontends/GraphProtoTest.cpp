//===- GraphProtoTest.cpp - IR <-> protobuf round trip and error checks ---===//
//
// Every graph of test/corpus/*.ir (found at run time) and the frontends'
// graphs go IR text -> Graph -> proto -> bytes -> proto -> Graph -> IR text
// and must print exactly as before.
//
//===----------------------------------------------------------------------===//
#include "TestSpecs.h"

#include "ir/IRText.h"
#include "proto/GraphProto.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace strata;
using namespace strata::test;

namespace {

/// Graph -> proto -> bytes -> proto -> Graph.
llvm::Expected<Graph> throughBytes(const Graph &g) {
  std::string bytes;
  EXPECT_TRUE(graphToProto(g).SerializeToString(&bytes));
  pb::Graph back;
  EXPECT_TRUE(back.ParseFromString(bytes));
  return graphFromProto(back);
}

void expectRoundTrip(const Graph &g) {
  auto back = throughBytes(g);
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_EQ(graphToString(*back), graphToString(g));
}

std::vector<std::string> corpusFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(sourcePath("test/corpus"), ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".ir")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

class CorpusRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusRoundTrip, PrintsIdenticallyAfterProto) {
  auto g = parseGraphFile(GetParam());
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  expectRoundTrip(*g);
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusRoundTrip,
                         ::testing::ValuesIn(corpusFiles()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           std::string name =
                               llvm::sys::path::stem(info.param).str();
                           std::replace_if(
                               name.begin(), name.end(),
                               [](char c) { return !isalnum(uint8_t(c)); },
                               '_');
                           return name;
                         });

TEST(GraphProto, CorpusIsNotEmpty) { EXPECT_GE(corpusFiles().size(), 5u); }

TEST(GraphProto, ModelGraphsRoundTrip) {
  expectRoundTrip(buildFromText(kTinyGPT));
  expectRoundTrip(buildFromText(kTinyLlama));
}

// Mesh, shardings with partial sums and multi-axis dims, and every attribute
// kind, in one graph.
constexpr const char *kEveryFeature = R"(graph @all mesh<pp=2,dp=2,tp=2>(
    %x: f32[4,8] {shard=[dp*tp,_], tag="in", param, n=3, f=0.5, ids=[1, 2], axes=["dp", "tp"]},
    %w: f32[8,8] {shard=[_,tp]}) {
  %y = matmul(%x, %w) {transpose_b=true} : f32[4,8] {shard=[dp,_], partial=[tp]}  # a.b
  %z = all_reduce(%y) {axes=["tp"], reduce="sum"} : f32[4,8]  # a.b
  return %z, %y
}
)";

TEST(GraphProto, KeepsMeshShardingsAndEveryAttributeKind) {
  auto g = parseGraph(kEveryFeature);
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  expectRoundTrip(*g);
  pb::Graph p = graphToProto(*g);
  ASSERT_EQ(p.mesh().axes_size(), 3);
  EXPECT_EQ(p.mesh().axes(2).name(), "tp");
  EXPECT_EQ(p.nodes(0).results(0).sharding().partial(0), "tp");
  EXPECT_EQ(p.nodes(1).operands(0), 2u); // %y: inputs first, then results
  EXPECT_EQ(p.outputs(1), 2u);
}

/// A small valid proto for the error cases to break.
pb::Graph validProto() {
  auto g = parseGraph(kEveryFeature);
  EXPECT_TRUE(bool(g));
  return graphToProto(*g);
}

std::string errorOf(const pb::Graph &p) {
  auto g = graphFromProto(p);
  if (g)
    return "<no error>";
  return toString(g.takeError());
}

TEST(GraphProto, RejectsUnknownOp) {
  pb::Graph p = validProto();
  p.mutable_nodes(1)->set_op("frobnicate");
  EXPECT_EQ(errorOf(p), "invalid graph proto: node 1 ('frobnicate'): unknown "
                        "op 'frobnicate'");
}

TEST(GraphProto, RejectsForwardAndOutOfRangeOperands) {
  pb::Graph p = validProto();
  p.mutable_nodes(0)->set_operands(1, 2); // %y, defined by this node
  EXPECT_EQ(errorOf(p), "invalid graph proto: node 0 ('matmul'): operand "
                        "index 2 does not name a value defined before it");
  p = validProto();
  p.set_outputs(0, 99);
  EXPECT_EQ(errorOf(p),
            "invalid graph proto: output index 99 out of range (4 values)");
}

TEST(GraphProto, RejectsBadValues) {
  pb::Graph p = validProto();
  p.mutable_inputs(1)->mutable_type()->set_dtype(pb::DTYPE_UNSPECIFIED);
  EXPECT_EQ(errorOf(p), "invalid graph proto: %w has an unknown dtype (0)");

  p = validProto();
  p.mutable_inputs(1)->mutable_type()->set_shape(0, -8);
  EXPECT_EQ(errorOf(p), "invalid graph proto: %w has a negative dim (-8)");

  p = validProto();
  p.mutable_nodes(1)->mutable_results(0)->set_name("x");
  EXPECT_EQ(errorOf(p), "invalid graph proto: duplicate value name %x");

  p = validProto();
  p.mutable_inputs(0)->mutable_attrs(0)->clear_value();
  EXPECT_EQ(errorOf(p),
            "invalid graph proto: %x: attribute 'axes' has no value");
}

TEST(GraphProto, RejectsWrongArity) {
  pb::Graph p = validProto();
  p.mutable_nodes(1)->add_operands(0);
  EXPECT_EQ(errorOf(p), "invalid graph proto: node 1 ('all_reduce'): takes 1 "
                        "operands, got 2");
}

TEST(GraphProto, RejectsBadMesh) {
  pb::Graph p = validProto();
  p.mutable_mesh()->mutable_axes(1)->set_name("tp");
  EXPECT_EQ(errorOf(p), "invalid graph proto: duplicate mesh axis 'tp'");
  p = validProto();
  p.mutable_mesh()->mutable_axes(0)->set_size(0);
  EXPECT_EQ(errorOf(p), "invalid graph proto: mesh axis 'pp' needs a name and "
                        "a size >= 1");
}

} // namespace
