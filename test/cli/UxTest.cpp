//===- UxTest.cpp - strata's help, notes, units, paths and drawings -------===//
//
// What a user meets besides errors (those are BadInputTest's): `strata help`,
// defaults in --help, notes on flags that change meaning, byte units, data
// paths of plans run from elsewhere, checkpoints under `inspect`, the
// strata-opt help example and the schedule drawing's legend.
//
//===----------------------------------------------------------------------===//
#include "RunStrata.h"

#include "llvm/Support/Regex.h"

using namespace strata::test;

namespace {

const char *kSpec = "family: GPT\nvocab_size: 65\nhidden: 32\nlayers: 4\n"
                    "heads: 4\nseq_len: 16\nmicro_batch: 2\n"
                    "training { steps: 2 eval_every: 0 }\n"
                    "data { path: \"data.txt\" }\n";

/// A directory with spec.textproto (kSpec) and its data.txt.
struct SpecDir : TempDir {
  SpecDir() {
    write("spec.textproto", kSpec);
    std::string text;
    while (text.size() < 4096)
      text += "Before we proceed any further, hear me speak.\n";
    write("data.txt", text);
  }
};

TEST(Help, HelpIsTheTopLevelHelp) {
  RunResult help = runStrata({"help"}), flag = runStrata({"--help"});
  ASSERT_EQ(help.rc, 0) << help.err;
  EXPECT_EQ(help.out, flag.out);
  for (const char *verb :
       {"compile", "inspect", "train", "verify", "launch", "generate"})
    EXPECT_NE(help.out.find("  " + std::string(verb) + " "), std::string::npos)
        << verb << " missing from\n"
        << help.out;
}

TEST(Help, HelpVerbIsTheVerbsHelp) {
  for (const char *verb : {"compile", "inspect", "train", "verify", "launch"}) {
    RunResult help = runStrata({"help", verb});
    RunResult flag = runStrata({verb, "--help"});
    ASSERT_EQ(help.rc, 0) << help.err;
    EXPECT_EQ(help.out, flag.out) << verb;
    EXPECT_NE(help.out.find("USAGE: strata " + std::string(verb)),
              std::string::npos)
        << help.out;
  }
}

TEST(Help, ShowsDefaults) {
  RunResult train = runStrata({"train", "--help"});
  for (const char *line :
       {"Validation batches per evaluation (default: 20)",
        "Pipeline schedule: gpipe, 1f1b, interleaved:V (default: 1f1b)",
        "Optimizer steps (default: the spec's training.steps)",
        "Steps between progress lines when stdout is not a terminal (a "
        "terminal gets one line, redrawn every step) (default: 10)"})
    EXPECT_NE(train.out.find(line), std::string::npos) << line << "\n"
                                                       << train.out;
  RunResult verify = runStrata({"verify", "--help"});
  EXPECT_NE(
      verify.out.find("Max normwise relative difference (default: 1e-05)"),
      std::string::npos)
      << verify.out;
}

TEST(Notes, PipelineBubbleIsNamed) {
  SpecDir dir;
  RunResult r = runStrata({"compile", dir.path("spec.textproto"), "--pp", "4",
                           "--microbatches", "2", "-o", dir.path("p.plan")});
  ASSERT_EQ(r.rc, 0) << r.err;
  // 1F1B's bubble is (pp-1)/microbatches = 3/2 of the step's compute.
  EXPECT_EQ(r.err, "strata compile: note: --pp 4 with 2 microbatches per "
                   "step: each pipeline rank idles 1.50 of a step's compute "
                   "in the pipeline bubble ((pp-1)/microbatches, 1f1b); use "
                   "--microbatches 4 or more (the bubble shrinks as "
                   "microbatches grow)\n");
  RunResult enough =
      runStrata({"compile", dir.path("spec.textproto"), "--pp", "4",
                 "--microbatches", "4", "-o", dir.path("p.plan")});
  ASSERT_EQ(enough.rc, 0) << enough.err;
  EXPECT_EQ(enough.err, "");
}

TEST(Notes, SeqOverrideAndIgnoredScheduleAreSaid) {
  SpecDir dir;
  RunResult r = runStrataIn(
      dir.path(""), {"train", "spec.textproto", "--seq", "32", "--schedule",
                     "gpipe", "--steps", "1", "--sample", "0", "--out", "run"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("strata train: note: --seq 32 changes the model's "
                       "seq_len 16 -> 32 (its learned position table wpe "
                       "gets 32 rows"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("strata train: warning: --schedule has no effect "
                       "without --pp 2 or more"),
            std::string::npos)
      << r.err;
}

TEST(Notes, LearningRateScheduleCutShortIsSaid) {
  SpecDir dir;
  // The notes come before the data is read: a missing --data ends the run
  // right after them.
  RunResult warm =
      runStrataIn(dir.path(""), {"train", "spec.textproto", "--steps", "3",
                                 "--warmup", "5", "--data", "missing.txt"});
  EXPECT_NE(warm.err.find("strata train: warning: the 5 warmup steps cover the "
                          "whole run of 3 steps: the learning rate never "
                          "reaches its peak"),
            std::string::npos)
      << warm.err;
  RunResult decay = runStrataIn(
      dir.path(""), {"train", "spec.textproto", "--decay-iters", "10", "--lr",
                     "0.002", "--data", "missing.txt"});
  EXPECT_NE(decay.err.find("strata train: note: --lr 0.002 also sets the final "
                           "learning rate to lr/10 = 0.0002"),
            std::string::npos)
      << decay.err;
  EXPECT_NE(
      decay.err.find("strata train: note: the cosine decay spans 10 steps "
                     "but the run stops at 2, before the learning rate "
                     "reaches 0.0002 (--decay-iters 2 decays over the "
                     "run)"),
      std::string::npos)
      << decay.err;
}

TEST(Units, MemoryBudgetIsPrintedInGiB) {
  SpecDir dir;
  // 16GB is 16e9 bytes = 14.90 GiB; 16GiB is 16 * 2^30.
  for (auto [budget, shown] :
       {std::pair{"16GB", "memory budget 16GB = 14.90 GiB per device\n"},
        std::pair{"16GiB", "memory budget 16GiB = 16.00 GiB per device\n"},
        std::pair{"10485760",
                  "memory budget 10485760 = 10.00 MiB per device\n"}}) {
    RunResult r =
        runStrata({"compile", dir.path("spec.textproto"), "--memory-budget",
                   budget, "-o", dir.path("p.plan")});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find(shown), std::string::npos) << r.out;
  }
}

TEST(DataPath, PlanFindsItsSpecsDataFromAnotherDirectory) {
  SpecDir specDir;
  TempDir elsewhere;
  RunResult c = runStrataIn(specDir.path(""),
                            {"compile", "spec.textproto", "-o", "p.plan"});
  ASSERT_EQ(c.rc, 0) << c.err;
  for (const char *input : {"p.plan", "spec.textproto"}) {
    RunResult r = runStrataIn(elsewhere.path(""),
                              {"train", specDir.path(input), "--steps", "1",
                               "--sample", "0", "--out",
                               elsewhere.path(std::string("run-") + input)});
    EXPECT_EQ(r.rc, 0) << input << ": " << r.err;
    EXPECT_NE(r.out.find(specDir.path("data.txt")), std::string::npos) << r.out;
  }
}

TEST(Inspect, CheckpointSaysWhatItIsAndWhereToUseIt) {
  SpecDir dir;
  RunResult t =
      runStrataIn(dir.path(""), {"train", "spec.textproto", "--steps", "1",
                                 "--sample", "0", "--out", "run"});
  ASSERT_EQ(t.rc, 0) << t.err;
  RunResult r = runStrataIn(dir.path(""), {"inspect", "run/checkpoint.bin"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char *line :
       {"checkpoint run/checkpoint.bin (written by `strata train`)\n",
        "  step        1 of 1\n", "  tokenizer   char, vocab ",
        "  strata generate run/checkpoint.bin --prompt TEXT",
        "  strata train SPEC --out run --resume"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST(StrataOpt, HelpExampleRuns) {
  RunResult help = runProgram(STRATA_OPT_BIN, {STRATA_OPT_BIN, "--help"});
  ASSERT_EQ(help.rc, 0);
  llvm::SmallVector<llvm::StringRef, 3> m;
  ASSERT_TRUE(
      llvm::Regex("e\\.g\\. '([^']*)' or +'([^']*)'").match(help.out, &m))
      << help.out;
  for (llvm::StringRef pipeline : {m[1], m[2]}) {
    RunResult r =
        runProgram(STRATA_OPT_BIN, {STRATA_OPT_BIN,
                                    std::string(STRATA_SOURCE_DIR) +
                                        "/test/lit/spmd/Inputs/gpt_block.ir",
                                    "--passes=" + pipeline.str()});
    EXPECT_EQ(r.rc, 0) << pipeline.str() << ": " << r.err;
  }
}

/// Approximate width of 12px Helvetica text: 0.6 em a character is more
/// than any but the widest letters take.
double textWidth(llvm::StringRef text) { return 7.2 * double(text.size()); }

TEST(ScheduleSvg, InterleavedLegendFitsTheDrawing) {
  SpecDir dir;
  std::string plan = dir.path("i.plan"), svg = dir.path("i.svg");
  ASSERT_EQ(runStrata({"compile", dir.path("spec.textproto"), "--pp", "2",
                       "--schedule", "interleaved:2", "--microbatches", "2",
                       "-o", plan})
                .rc,
            0);
  RunResult r = runStrata({"inspect", plan, "--schedule", svg});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string text = slurp(svg);
  llvm::SmallVector<llvm::StringRef, 3> size;
  ASSERT_TRUE(llvm::Regex("<svg [^>]*width=\"([0-9.]+)\" height=\"([0-9.]+)\"")
                  .match(text, &size));
  double width = std::stod(size[1].str()), height = std::stod(size[2].str());
  llvm::Regex legendText("<text x=\"([0-9.]+)\" y=\"([0-9.]+)\" "
                         "font-size=\"12\">([^<]*)</text>");
  int legendItems = 0;
  for (llvm::StringRef rest = text; !rest.empty();) {
    llvm::SmallVector<llvm::StringRef, 4> t;
    if (!legendText.match(rest, &t))
      break;
    ++legendItems;
    double x = std::stod(t[1].str()), y = std::stod(t[2].str());
    EXPECT_LE(x + textWidth(t[3]), width) << t[3].str() << " is clipped";
    EXPECT_LE(y, height) << t[3].str() << " is clipped";
    rest = rest.drop_front(t[0].data() + t[0].size() - rest.data());
  }
  // forward and backward of 2 chunks, optimizer, idle, send -> recv.
  EXPECT_EQ(legendItems, 7) << text;
}

} // namespace
