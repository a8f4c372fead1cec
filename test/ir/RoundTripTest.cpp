//===- RoundTripTest.cpp - print(parse(text)) == text over the corpus -----===//
//
// Every test/corpus/*.ir file is canonical text: parsing and printing it gives
// the same bytes, and the parsed graph verifies. The corpus must use every op
// of Ops.def, so a new op cannot skip the round trip.
//
//===----------------------------------------------------------------------===//
#include "ir/Builder.h"
#include "ir/IRText.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace strata;

namespace {

std::vector<std::string> corpusFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(STRATA_CORPUS_DIR, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".ir")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : "";
}

class CorpusRoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(CorpusRoundTrip, PrintsBackToTheSameText) {
  std::string text = readFile(GetParam());
  ASSERT_FALSE(text.empty()) << GetParam();
  auto g = parseGraph(text, GetParam());
  ASSERT_TRUE(bool(g)) << toString(g.takeError());
  EXPECT_EQ(graphToString(*g), text);
  llvm::Error e = verifyGraph(*g);
  EXPECT_FALSE(bool(e)) << toString(std::move(e));
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusRoundTrip,
                         testing::ValuesIn(corpusFiles()),
                         [](const testing::TestParamInfo<std::string> &info) {
                           std::string name =
                               llvm::sys::path::stem(info.param).str();
                           std::replace_if(
                               name.begin(), name.end(),
                               [](char c) { return !std::isalnum(uint8_t(c)); },
                               '_');
                           return name;
                         });

TEST(Corpus, IsLargeEnough) { EXPECT_GE(corpusFiles().size(), 12u); }

TEST(Corpus, UsesEveryOp) {
  std::set<OpKind> used;
  for (const std::string &path : corpusFiles()) {
    auto g = parseGraphFile(path);
    ASSERT_TRUE(bool(g)) << toString(g.takeError());
    for (const Node &n : g->nodes())
      used.insert(n.op);
  }
  for (int i = 0; i < kNumOps; ++i)
    EXPECT_TRUE(used.count(OpKind(i)))
        << "no corpus graph uses op '" << opName(OpKind(i)).str() << "'";
}

// Graphs built in C++ (fresh names, scopes, shardings) survive the round trip.
TEST(RoundTrip, BuiltGraph) {
  Graph g;
  g.name = "built";
  g.mesh = Mesh{{{"dp", 2}, {"tp", 4}}};
  ValueId x = g.addInput("x", {DType::F32, {4, 8}});
  ValueId w = g.addInput("w", {DType::F32, {8, 16}}, {{"param", true}});
  Sharding ws = Sharding::replicated(2);
  ws.dims[1] = {"tp", "dp"};
  g.value(w).sharding = ws;
  Builder b(g);
  b.setScope("blk.0");
  ValueId h = b.matmul(x, w);
  ValueId h2 = b.matmul(x, w);
  ValueId s = b.scale(b.add(h, h2), 0.5);
  g.value(s).sharding = Sharding::replicated(2);
  g.value(s).sharding->partial = {"tp"};
  g.addOutput(s);
  std::string text = graphToString(g);
  auto parsed = parseGraph(text);
  ASSERT_TRUE(bool(parsed)) << toString(parsed.takeError());
  EXPECT_EQ(graphToString(*parsed), text);
  EXPECT_EQ(parsed->value(parsed->lookup(g.value(s).name)).sharding,
            g.value(s).sharding);
  EXPECT_EQ(parsed->node(0).scope, "blk.0");
}

TEST(ParseGraphFile, MissingFileNamesIt) {
  auto g = parseGraphFile("/nonexistent/dir/x.ir");
  ASSERT_FALSE(bool(g));
  EXPECT_EQ(toString(g.takeError()),
            "/nonexistent/dir/x.ir: error: cannot open file (No such file or "
            "directory)");
}

} // namespace
