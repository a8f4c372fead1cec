//===- PlanKernelsTest.cpp - The generated kernels a plan file carries
//-----===//
//
// `strata compile` (the real binary) writes a plan; read back here:
//  - the kernel libraries are exactly what codegen renders from the plan's
//    own stored programs (so a plan's kernels and programs agree, and the
//    plan needs no spec or compiler to know its kernels);
//  - every fused node of every program has an entry in each library, and
//    each entry's symbol is defined in the source;
//  - the CUDA library compiles with NVRTC to sm_80 and sm_90 cubins;
//  - a plan whose kernel source was altered (CRC fixed up, so only the
//    SHA-256 can tell) is refused with a clear error;
//  - `strata train PLAN` runs the plan's programs, and refuses a plan whose
//    kernels (consistently hashed) are not what its programs generate, or
//    whose stored program is not a valid graph, naming the program.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelLibrary.h"
#include "proto/GraphProto.h"
#include "proto/PlanFile.h"
#ifdef STRATA_HAVE_NVRTC
#include "codegen/NvrtcCompiler.h"
#endif

#include "../cli/RunStrata.h"

#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"

#include <gtest/gtest.h>

#include <fstream>

namespace strata {
namespace {

/// Compiles examples/llama_tiny with tp 2 and pp 2 into a temporary plan.
pb::Plan compiledPlan(std::vector<std::string> extra = {}) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("kernels", "plan", path);
  std::vector<std::string> args = {"compile",
                                   std::string(STRATA_SOURCE_DIR) +
                                       "/examples/llama_tiny.textproto",
                                   "--tp",
                                   "2",
                                   "--pp",
                                   "2",
                                   "--microbatches",
                                   "2",
                                   "-o",
                                   path.str().str()};
  args.insert(args.end(), extra.begin(), extra.end());
  test::RunResult r = test::runStrata(args);
  EXPECT_EQ(r.rc, 0) << r.err;
  auto plan = readPlanFile(path);
  EXPECT_TRUE(bool(plan)) << toString(plan.takeError());
  llvm::sys::fs::remove(path);
  return plan ? std::move(*plan) : pb::Plan();
}

/// The plan's programs with the tags their kernels are named by.
std::vector<std::pair<std::string, Graph>> programs(const pb::Plan &plan) {
  std::vector<std::pair<std::string, Graph>> out;
  auto add = [&](std::string tag, const pb::Graph &proto) {
    auto g = graphFromProto(proto);
    EXPECT_TRUE(bool(g)) << tag << ": " << toString(g.takeError());
    if (g)
      out.push_back({std::move(tag), std::move(*g)});
  };
  for (const pb::PipelineStage &s : plan.pipeline().stages()) {
    add("s" + std::to_string(s.index()) + "f", s.forward());
    add("s" + std::to_string(s.index()) + "b", s.backward());
  }
  for (int r = 0; r < plan.pipeline().optimizers_size(); ++r)
    add("r" + std::to_string(r) + "o", plan.pipeline().optimizers(r));
  return out;
}

TEST(PlanKernels, LibrariesAreWhatTheStoredProgramsRender) {
  pb::Plan plan = compiledPlan();
  ASSERT_TRUE(plan.parallel().fusion());
  ASSERT_EQ(plan.kernels_size(), 2);
  auto progs = programs(plan);
  std::vector<codegen::TaggedProgram> tagged;
  int64_t fusedNodes = 0;
  for (const auto &[tag, g] : progs) {
    tagged.push_back({tag, &g});
    for (const Node &n : g.nodes())
      fusedNodes += n.op == OpKind::Fused;
  }
  ASSERT_GT(fusedNodes, 0);
  for (const pb::KernelLibrary &k : plan.kernels()) {
    auto target = codegen::parseTarget(k.target());
    ASSERT_TRUE(bool(target)) << toString(target.takeError());
    auto lib = codegen::renderLibrary(tagged, *target);
    ASSERT_TRUE(bool(lib)) << toString(lib.takeError());
    EXPECT_EQ(lib->sha256, k.sha256()) << k.target();
    EXPECT_EQ(lib->source, k.source()) << k.target();
    ASSERT_EQ(k.entries_size(), fusedNodes) << k.target();
    for (const pb::KernelEntry &e : k.entries())
      EXPECT_NE(k.source().find(" " + e.symbol() + "("), std::string::npos)
          << k.target() << ": no definition of " << e.symbol();
  }
}

TEST(PlanKernels, NoFusionMeansNoKernels) {
  pb::Plan plan = compiledPlan({"--no-fusion"});
  EXPECT_FALSE(plan.parallel().fusion());
  EXPECT_EQ(plan.kernels_size(), 0);
  for (const auto &[tag, g] : programs(plan))
    for (const Node &n : g.nodes())
      EXPECT_NE(n.op, OpKind::Fused) << tag;
}

#ifdef STRATA_HAVE_NVRTC
TEST(PlanKernels, CudaLibraryCompilesWithNvrtc) {
  pb::Plan plan = compiledPlan();
  for (const pb::KernelLibrary &k : plan.kernels()) {
    if (k.target() != "cuda")
      continue;
    for (int arch : {80, 90}) {
      auto cubin = codegen::compileCubin(k.source(), arch, "plan_kernels.cu");
      ASSERT_TRUE(bool(cubin))
          << "sm_" << arch << ": " << toString(cubin.takeError());
      EXPECT_GT(cubin->size(), 0u);
    }
    return;
  }
  FAIL() << "the plan has no cuda library";
}
#endif

TEST(PlanKernels, AlteredSourceIsRefused) {
  pb::Plan plan = compiledPlan();
  ASSERT_GT(plan.kernels_size(), 0);
  // One character of the C++ source changed; the header's CRC recomputed so
  // that the file is otherwise well formed.
  std::string &src = *plan.mutable_kernels(0)->mutable_source();
  size_t at = src.find("+");
  ASSERT_NE(at, std::string::npos);
  src[at] = '-';
  std::string bytes = serializePlan(plan);
  auto parsed = parsePlan(bytes, "altered.plan");
  ASSERT_FALSE(bool(parsed));
  EXPECT_EQ(toString(parsed.takeError()),
            "altered.plan: error: corrupt plan (the cpp kernel library's "
            "source does not hash to its recorded SHA-256; recompile it with "
            "`strata compile`)");
}

TEST(PlanKernels, TrainRunsThePlanAndRefusesForeignKernels) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plan-train", dir));
  std::string d = dir.str().str();
  {
    std::ofstream text(d + "/text.txt");
    for (int i = 0; i < 200; ++i)
      text << "to be or not to be, that is the question " << i << "\n";
  }
  pb::Plan plan = compiledPlan();
  std::string good = d + "/good.plan", foreign = d + "/foreign.plan";
  ASSERT_FALSE(bool(writePlanFile(good, plan)));
  std::vector<std::string> train = {
      "train",    good, "--data",       d + "/text.txt",
      "--steps",  "1",  "--eval-every", "0",
      "--sample", "0",  "--out",        d + "/out"};
  test::RunResult ok = test::runStrata(train);
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("the plan's compiled programs"), std::string::npos)
      << ok.out;

  // Kernels that hash right but are not the programs' (another codegen).
  pb::KernelLibrary &cpp = *plan.mutable_kernels(0);
  cpp.set_source(cpp.source() + "// edited\n");
  cpp.set_sha256(codegen::sha256Hex(cpp.source()));
  ASSERT_FALSE(bool(writePlanFile(foreign, plan)));
  train[1] = foreign;
  train.back() = d + "/out2";
  test::RunResult bad = test::runStrata(train);
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("foreign.plan: the plan's cpp kernels are not what "
                         "this strata generates for the plan's programs"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(llvm::sys::fs::exists(d + "/out2"));

  // A stored program that is not a valid graph (a node lost an operand),
  // in an otherwise well-formed plan.
  pb::Plan broken = compiledPlan();
  pb::Graph &f =
      *broken.mutable_pipeline()->mutable_stages(1)->mutable_forward();
  int victim = -1;
  for (int k = 0; k < f.nodes_size() && victim < 0; ++k)
    if (f.nodes(k).op() == "matmul")
      victim = k;
  ASSERT_GE(victim, 0);
  f.mutable_nodes(victim)->mutable_operands()->RemoveLast();
  std::string brokenPath = d + "/broken.plan";
  ASSERT_FALSE(bool(writePlanFile(brokenPath, broken)));
  train[1] = brokenPath;
  train.back() = d + "/out3";
  test::RunResult invalid = test::runStrata(train);
  EXPECT_EQ(invalid.rc, 1) << invalid.err;
  EXPECT_NE(invalid.err.find("broken.plan: stage 1 F: "), std::string::npos)
      << invalid.err;
  EXPECT_FALSE(llvm::sys::fs::exists(d + "/out3"));
  llvm::sys::fs::remove_directories(d);
}

} // namespace
} // namespace strata
