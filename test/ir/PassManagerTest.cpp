//===- PassManagerTest.cpp - Pipelines, verification between passes, dumps
//-===//
#include "passes/PassManager.h"

#include "ir/IRText.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

std::string errorOf(llvm::Error e) {
  return e ? toString(std::move(e)) : "no error";
}

template <typename T> std::string errorOf(llvm::Expected<T> v) {
  return v ? "no error" : toString(v.takeError());
}

TEST(Pipeline, ParsesNamesAndOptions) {
  auto p = parsePipeline(" autodiff, spmd{tp=2, dp = 4 },dce{}  ");
  ASSERT_TRUE(bool(p)) << toString(p.takeError());
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].name, "autodiff");
  EXPECT_TRUE((*p)[0].options.empty());
  EXPECT_EQ((*p)[1].name, "spmd");
  EXPECT_EQ((*p)[1].options.lookup("tp"), "2");
  EXPECT_EQ((*p)[1].options.lookup("dp"), "4");
  EXPECT_EQ((*p)[2].name, "dce");
}

TEST(Pipeline, EmptyTextIsAnEmptyPipeline) {
  auto p = parsePipeline("  ");
  ASSERT_TRUE(bool(p));
  EXPECT_TRUE(p->empty());
}

TEST(Pipeline, Errors) {
  EXPECT_EQ(errorOf(parsePipeline("a,,b")),
            "invalid pass pipeline 'a,,b' at column 3: expected a pass name");
  EXPECT_EQ(errorOf(parsePipeline("a{k}")),
            "invalid pass pipeline 'a{k}' at column 4: expected '=' after "
            "option 'k'");
  EXPECT_EQ(errorOf(parsePipeline("a{k=v")),
            "invalid pass pipeline 'a{k=v' at column 6: expected ',' or '}'");
  EXPECT_EQ(errorOf(parsePipeline("a{k=1,k=2}")),
            "invalid pass pipeline 'a{k=1,k=2}' at column 10: option 'k' is "
            "given twice");
  EXPECT_EQ(errorOf(parsePipeline("my pass")),
            "invalid pass pipeline 'my pass' at column 1: 'my pass' is not a "
            "valid name");
  EXPECT_EQ(errorOf(parsePipeline("a}b")),
            "invalid pass pipeline 'a}b' at column 2: expected ',' or the end");
}

TEST(PassOptions, UnknownOptionIsNamed) {
  PassOptions opts;
  opts["tp"] = "2";
  EXPECT_EQ(errorOf(checkPassOptions("spmd", opts, {"dp", "tp"})), "no error");
  EXPECT_EQ(errorOf(checkPassOptions("spmd", opts, {"dp"})),
            "pass 'spmd' has no option 'tp' (known: dp)");
  EXPECT_EQ(errorOf(checkPassOptions("dce", opts, {})),
            "pass 'dce' has no option 'tp' (it takes none)");
}

TEST(Registry, HoldsDceSortedByName) {
  registerAllPasses();
  registerAllPasses(); // idempotent
  const PassInfo *dce = lookupPass("dce");
  ASSERT_NE(dce, nullptr);
  EXPECT_EQ(dce->name, "dce");
  EXPECT_EQ(lookupPass("no-such-pass"), nullptr);
  auto all = registeredPasses();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), [](auto *a, auto *b) {
    return a->name < b->name;
  }));
}

// A pass that records its name and, if asked, breaks or fails.
class TestPass : public Pass {
public:
  enum Mode { Keep, BreakTypes, Fail };
  TestPass(std::string name, std::vector<std::string> &log, Mode mode = Keep)
      : name_(std::move(name)), log_(log), mode_(mode) {}
  llvm::StringRef name() const override { return name_; }
  llvm::Expected<bool> run(Graph &g) override {
    log_.push_back(name_);
    if (mode_ == Fail)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "boom");
    if (mode_ == BreakTypes)
      g.value(g.node(0).results[0]).type.shape = {3};
    return mode_ == BreakTypes;
  }

private:
  std::string name_;
  std::vector<std::string> &log_;
  Mode mode_;
};

Graph smallGraph() {
  auto g = parseGraph("graph @g(%x: f32[2]) {\n  %y = neg(%x) : f32[2]  # s\n"
                      "  return %y\n}\n");
  if (!g)
    ADD_FAILURE() << toString(g.takeError());
  return std::move(*g);
}

TEST(PassManager, RunsPassesInOrder) {
  std::vector<std::string> log;
  PassManager pm;
  pm.addPass(std::make_unique<TestPass>("first", log));
  pm.addPass(std::make_unique<TestPass>("second", log));
  Graph g = smallGraph();
  auto changed = pm.run(g);
  ASSERT_TRUE(bool(changed)) << toString(changed.takeError());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(log, (std::vector<std::string>{"first", "second"}));
}

TEST(PassManager, VerifierAfterEachPassNamesThePass) {
  std::vector<std::string> log;
  PassManager pm;
  pm.addPass(std::make_unique<TestPass>("ok", log));
  pm.addPass(std::make_unique<TestPass>("breaker", log, TestPass::BreakTypes));
  pm.addPass(std::make_unique<TestPass>("never", log));
  Graph g = smallGraph();
  EXPECT_EQ(errorOf(pm.run(g)),
            "verifier failed after pass 'breaker': %y = neg (s): result %y has "
            "type f32[3] but shape inference gives f32[2]");
  EXPECT_EQ(log, (std::vector<std::string>{"ok", "breaker"}));
}

TEST(PassManager, VerificationCanBeTurnedOff) {
  std::vector<std::string> log;
  PassManagerOptions opts;
  opts.verifyEach = false;
  PassManager pm(opts);
  pm.addPass(std::make_unique<TestPass>("breaker", log, TestPass::BreakTypes));
  Graph g = smallGraph();
  auto changed = pm.run(g);
  ASSERT_TRUE(bool(changed)) << toString(changed.takeError());
  EXPECT_TRUE(*changed);
}

TEST(PassManager, VerifiesTheInputFirst) {
  std::vector<std::string> log;
  PassManager pm;
  pm.addPass(std::make_unique<TestPass>("p", log));
  Graph g = smallGraph();
  g.addOutput(99);
  EXPECT_EQ(errorOf(pm.run(g)),
            "verifier failed on the input graph: output 1 "
            "is not an input or a node result of the graph");
  EXPECT_TRUE(log.empty());
}

TEST(PassManager, PassErrorsNameThePass) {
  std::vector<std::string> log;
  PassManager pm;
  pm.addPass(std::make_unique<TestPass>("fails", log, TestPass::Fail));
  Graph g = smallGraph();
  EXPECT_EQ(errorOf(pm.run(g)), "pass 'fails': boom");
}

TEST(PassManager, PrintsIrAfterNamedPassOrAll) {
  std::vector<std::string> log;
  std::string out;
  llvm::raw_string_ostream os(out);
  PassManagerOptions opts;
  opts.printIrAfter = "b";
  PassManager pm(opts, os);
  pm.addPass(std::make_unique<TestPass>("a", log));
  pm.addPass(std::make_unique<TestPass>("b", log));
  Graph g = smallGraph();
  ASSERT_TRUE(bool(pm.run(g)));
  EXPECT_EQ(out, "# IR after b (unchanged)\n" + graphToString(g));

  out.clear();
  opts.printIrAfter = "all";
  PassManager all(opts, os);
  all.addPass(std::make_unique<TestPass>("a", log));
  all.addPass(std::make_unique<TestPass>("b", log));
  ASSERT_TRUE(bool(all.run(g)));
  EXPECT_EQ(out, "# IR after a (unchanged)\n" + graphToString(g) +
                     "# IR after b (unchanged)\n" + graphToString(g));

  opts.printIrAfter = "c";
  PassManager missing(opts, os);
  missing.addPass(std::make_unique<TestPass>("a", log));
  EXPECT_EQ(errorOf(missing.run(g)),
            "--print-ir-after: no pass 'c' in the pipeline");
}

TEST(PassManager, DumpsNumberedFiles) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("strata-dump", dir));
  llvm::SmallString<128> sub(dir);
  llvm::sys::path::append(sub, "nested");
  registerAllPasses();
  PassManagerOptions opts;
  opts.dumpDir = std::string(sub);
  PassManager pm(opts);
  ASSERT_FALSE(bool(pm.addPipeline("dce")));
  Graph g = smallGraph();
  std::string before = graphToString(g);
  ASSERT_TRUE(bool(pm.run(g)));
  for (auto [file, text] : {std::pair{"00-input.ir", before},
                            std::pair{"01-dce.ir", graphToString(g)}}) {
    llvm::SmallString<128> path(sub);
    llvm::sys::path::append(path, file);
    auto buf = llvm::MemoryBuffer::getFile(path);
    ASSERT_TRUE(bool(buf)) << path.str().str();
    EXPECT_EQ((*buf)->getBuffer(), text);
  }
  llvm::sys::fs::remove_directories(dir);
}

TEST(PassManager, AddPipelineBuildsRegisteredPasses) {
  registerAllPasses();
  PassManager pm;
  EXPECT_EQ(errorOf(pm.addPipeline("dce,dce")), "no error");
  EXPECT_EQ(pm.size(), 2u);
  EXPECT_EQ(errorOf(pm.addPipeline("dce,nope")),
            "unknown pass 'nope' (see strata-opt --list-passes)");
  EXPECT_EQ(errorOf(pm.addPipeline("dce{aggressive=1}")),
            "pass 'dce' has no option 'aggressive' (it takes none)");
}

} // namespace
