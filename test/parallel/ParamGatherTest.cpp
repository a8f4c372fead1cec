//===- ParamGatherTest.cpp - ZeRO-1's parameter gathers, overlapped
//--------===//
//
// The gathers of runtime/parallel/ParamGatherer.h:
//  - the plan: the ZeRO-1 optimizer program returns each updated parameter
//    as its dp shard and holds no all_gather (except a tied parameter's it
//    sends to another pipeline rank); parameterGathers spells the runtime's
//    gathers out (what `inspect --collectives` lists);
//  - overlapped with the next forward (small buckets, each waited for
//    before its first reader) vs right after the optimizer: the losses of
//    three steps and every parameter and moment afterwards are bitwise
//    equal, for dp 2 ZeRO-1 GPT and Llama, pp 2 x dp 2 ZeRO-1 GPT (the tied
//    embedding), on the CPU devices and on interpret-mode CUDA devices
//    (NCCL emulated over Gloo on the dp communicator's stream);
//  - the overlap is real: in a trace, a gather of the step's first forward
//    starts after that forward program started and ends after it started
//    (the gathers run while it computes); without overlap every gather
//    ends before the next step's first forward starts.
// Agreement with the serial plan (1e-5) is the verify matrix's
// (ParallelTrainingTest, NcclVerifyTest).
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "passes/pipeline/GradReduction.h"
#include "runtime/Trace.h"
#include "runtime/parallel/Trainer.h"
#include "test/parallel/BitwiseRuns.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ParamGatherPlan, ZeroOneOptimizerReturnsShards) {
  ParallelConfig c;
  c.tp = 2;
  c.dp = 2;
  c.distributedOptimizer = true;
  auto p = compilePipeline(buildModelGraph(test::tinyGpt(0, 2)),
                           trainingCompileOptions(c, test::tinyTraining(1)));
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  const Graph &opt = p->pipeline.optimizers[0];
  for (const Node &n : opt.nodes())
    EXPECT_NE(n.op, OpKind::AllGather);
  // wte is split over tp along dim 0, its state over dp along dim 1.
  ValueId wte = opt.lookup("new.wte");
  ASSERT_NE(wte, kNoValue);
  EXPECT_EQ(opt.type(wte), (TensorType{DType::F32, {16, 8}}));
  Graph gathers = parameterGathers(opt);
  int64_t shards = 0;
  for (size_t o = 0; o < opt.outputs().size(); ++o)
    shards += gatheredDim(opt, o) >= 0;
  EXPECT_GT(shards, 0);
  ASSERT_EQ(int64_t(gathers.nodes().size()), shards);
  for (const Node &n : gathers.nodes()) {
    EXPECT_EQ(n.op, OpKind::AllGather);
    EXPECT_EQ(n.attrs.getStrings("axes"), StrList{"dp"});
  }
  ValueId full = gathers.lookup("new.wte");
  ASSERT_NE(full, kNoValue);
  EXPECT_EQ(gathers.type(full), (TensorType{DType::F32, {16, 16}}));
}

TEST(ParamGatherPlan, TiedParameterSentIsGatheredInTheProgram) {
  ParallelConfig c;
  c.pp = 2;
  c.dp = 2;
  c.distributedOptimizer = true;
  auto p = compilePipeline(buildModelGraph(test::tinyGpt(0, 2)),
                           trainingCompileOptions(c, test::tinyTraining(2)));
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  // Rank 0 owns wte and sends its new value to the head's rank: gathered
  // in the program; its other parameters are returned as shards.
  const Graph &opt = p->pipeline.optimizers[0];
  int64_t gathered = 0;
  for (const Node &n : opt.nodes())
    if (n.op == OpKind::AllGather) {
      ++gathered;
      EXPECT_EQ(opt.value(n.results[0]).name, "new.wte");
    }
  EXPECT_EQ(gathered, 1);
  EXPECT_GT(parameterGathers(opt).nodes().size(), 0u);
}

test::TrainRun train(bool llama, int64_t pp, Backend backend, bool overlap,
                     Trace *trace = nullptr) {
  ParallelConfig c;
  c.dp = 2;
  c.pp = pp;
  c.distributedOptimizer = true;
  DeviceGroupOptions d = test::quickDevices();
  d.backend = backend;
  TrainOptions t = test::tinyTraining(2);
  t.gradReduce.bucketBytes = 4096; // several buckets
  t.gradReduce.overlapParamGather = overlap;
  return test::trainThreeSteps(
      llama ? test::tinyLlama(0, 2) : test::tinyGpt(0, 2), c, d, t, trace);
}

struct Case {
  const char *name;
  bool llama;
  int64_t pp;
  Backend backend;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class GatherOverlapIsBitwiseSequential : public testing::TestWithParam<Case> {};

TEST_P(GatherOverlapIsBitwiseSequential, LossesAndState) {
  const Case &c = GetParam();
  test::TrainRun overlapped = train(c.llama, c.pp, c.backend, true);
  ASSERT_EQ(overlapped.losses.size(), 3u);
  // The runs learn: the losses move (a stale parameter would show).
  EXPECT_NE(overlapped.losses.front(), overlapped.losses.back());
  test::expectBitwiseEqual(overlapped, train(c.llama, c.pp, c.backend, false));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, GatherOverlapIsBitwiseSequential,
    testing::Values(Case{"gpt_dp2_cpu", false, 1, Backend::Cpu},
                    Case{"llama_dp2_cpu", true, 1, Backend::Cpu},
                    Case{"gpt_pp2_dp2_cpu", false, 2, Backend::Cpu},
                    Case{"gpt_dp2_interpret", false, 1, Backend::CudaInterpret},
                    Case{"llama_pp2_dp2_interpret", true, 2,
                         Backend::CudaInterpret}),
    [](const auto &info) { return std::string(info.param.name); });

struct Span {
  int64_t begin, end;
};

/// Rank 0's spans named `name` in the trace, in time order.
std::vector<Span> spans(const Trace &trace, llvm::StringRef name) {
  std::vector<Span> out;
  llvm::json::Value v = trace.toJson();
  for (const llvm::json::Value &e : *v.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object &o = *e.getAsObject();
    if (o.getInteger("pid").getValueOr(-1) != 0 ||
        o.getString("ph").getValueOr("") != "X" || *o.getString("name") != name)
      continue;
    int64_t ts = *o.getInteger("ts");
    out.push_back({ts, ts + *o.getInteger("dur")});
  }
  llvm::sort(out, [](Span a, Span b) { return a.begin < b.begin; });
  return out;
}

// The trace shows the overlap: the gathers of step 1's update run during
// step 2's first forward (F0): each starts after F0 started, and F0's span
// (which lasts until the device is idle) holds them. Without overlap they
// all end before that F0 starts.
TEST(ParamGatherTrace, GathersRunDuringTheNextForward) {
  Trace overlapped, sequential;
  train(false, 1, Backend::Cpu, true, &overlapped);
  train(false, 1, Backend::Cpu, false, &sequential);
  for (Trace *t : {&overlapped, &sequential}) {
    std::vector<Span> f0 = spans(*t, "F0"),
                      gathers = spans(*t, "all_gather dp");
    ASSERT_EQ(f0.size(), 3u); // one per step
    // Several buckets per update, two updates before the last step.
    ASSERT_GE(gathers.size(), 4u);
    Span next = f0[1]; // step 2's first forward
    int64_t during = 0, before = 0;
    for (Span g : gathers) {
      if (g.begin >= f0[0].end && g.end <= next.end)
        ++(g.begin >= next.begin ? during : before);
    }
    if (t == &overlapped) {
      EXPECT_GT(during, 0);
      EXPECT_EQ(before, 0);
    } else {
      EXPECT_EQ(during, 0);
      EXPECT_GT(before, 0);
    }
  }
}

} // namespace
} // namespace strata
