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
           // Model FLOPs 72·l·h²·(1 + s/(6h) + V/(12·l·h)) per token
           // (l 4, h 128, s 64, V 128): 5.21 M; no recomputation.
           "  per token     5.21 MFLOP model, 5.21 MFLOP hardware\n",
           "  per step      4 GFLOP model, 4 GFLOP hardware (12 x 64 tokens)\n",
           "layout\n  devices       1 (tp 1 x dp 1 x pp 1)\n",
           "  tokens/step   768 (12 sequences of 64)\n",
           "  nodes         93\n",
       })
    EXPECT_NE(i.out.find(line), std::string::npos) << line << "\n" << i.out;

  // A spec inspects exactly like the plan compiled from it, less the
  // plan's layout.
  RunResult s = runStrata({"inspect", example("gpt_tiny")});
  ASSERT_EQ(s.rc, 0) << s.err;
  size_t from = i.out.find("layout\n"), to = i.out.find("parameters\n");
  ASSERT_LT(from, to);
  EXPECT_EQ(s.out, i.out.substr(0, from) + i.out.substr(to));
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
