//===- CliTest.cpp - strata compile / inspect on the examples -------------===//
#include "RunStrata.h"

#include "llvm/Support/JSON.h"

using namespace strata::test;

namespace {

TEST(Cli, CompileWritesAPlanThatInspectReads) {
  TempDir dir;
  std::string plan = dir.path("tiny.plan");
  RunResult c = runStrata({"compile", example("gpt_tiny"), "-o", plan});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.out,
            "wrote " + plan + " (gpt, 817,920 params, 93 graph nodes)\n");
  EXPECT_EQ(dir.entries().size(), 1u);

  RunResult i = runStrata({"inspect", plan});
  ASSERT_EQ(i.rc, 0) << i.err;
  for (const char *line : {
           "model gpt-tiny\n",
           "  family        GPT\n",
           "  plan format   2 (strata 0.1.0)\n",
           "  heads         4 (kv 4, head_dim 32)\n",
           "  vocab         65 real, 128 padded (multiple of 128)\n",
           "    embedding                  24,576  wte, wpe\n",
           "    per layer                 198,272  x 4 = 793,088\n",
           "      attention                66,048\n",
           "      mlp                     131,712\n",
           "    lm head                         0  tied to wte\n",
           "    total                     817,920\n",
           "  per token     6.91 MFLOP\n",
           "  per step      5.31 GFLOP (12 x 64 tokens)\n",
           "  nodes         93\n",
       })
    EXPECT_NE(i.out.find(line), std::string::npos) << line << "\n" << i.out;

  // A spec inspects exactly like the plan compiled from it.
  RunResult s = runStrata({"inspect", example("gpt_tiny")});
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_EQ(s.out, i.out);
}

TEST(Cli, InspectJsonIsMachineReadable) {
  RunResult r = runStrata({"inspect", example("llama2_7b"), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto v = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
  const llvm::json::Object *o = v->getAsObject();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->getString("family"), llvm::StringRef("llama"));
  EXPECT_EQ(o->getInteger("ffn"), llvm::Optional<int64_t>(11008));
  EXPECT_EQ(o->getInteger("padded_vocab_size"), llvm::Optional<int64_t>(32000));
  EXPECT_EQ(o->getObject("params")->getInteger("total"),
            llvm::Optional<int64_t>(6738415616));
  EXPECT_EQ(o->getObject("params")->getArray("layers")->size(), 32u);
  EXPECT_EQ(o->getObject("graph")->getInteger("params"),
            llvm::Optional<int64_t>(291));
}

TEST(Cli, InspectIrPrintsTheGraph) {
  RunResult r = runStrata({"inspect", example("llama_tiny"), "--ir"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("graph @llama(\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("%layers.3.attn.k.w: f32[128,64] {init=\"normal\", "
                       "param, std=0.02}"),
            std::string::npos);
  EXPECT_NE(r.out.find("  return %loss.cross_entropy\n}\n"), std::string::npos);
}

TEST(Cli, InspectDotClustersLayers) {
  RunResult r = runStrata({"inspect", example("gpt_tiny"), "--dot"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("digraph \"gpt\" {\n", 0), 0u) << r.out;
  for (const char *s : {
           "  subgraph cluster_layers_0 {\n    label=\"layers.0\";\n",
           "  subgraph cluster_layers_3 {\n",
           "[shape=box, label=\"attention\\nf32[12,64,4,32]\", "
           "tooltip=\"layers.2.attn\"];",
           "[shape=ellipse, label=\"wte\\nf32[128,128]\"];",
           "[shape=doublecircle, label=\"loss.cross_entropy\"];",
       })
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n");
}

TEST(Cli, EveryVerbHasHelp) {
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"},
                                        {"compile", "--help"},
                                        {"inspect", "--help"}}) {
    RunResult r = runStrata(args);
    EXPECT_EQ(r.rc, 0) << args[0];
    EXPECT_NE(r.out.find("USAGE: strata"), std::string::npos) << r.out;
  }
  RunResult r = runStrata({"compile", "--help"});
  EXPECT_NE(r.out.find("-o=<file>"), std::string::npos) << r.out;
}

} // namespace
