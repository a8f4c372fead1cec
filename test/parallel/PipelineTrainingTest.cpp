//===- PipelineTrainingTest.cpp - Pipelined training equals serial training
//===//
//
// The trainer (runtime/parallel/Trainer.h) on pipelined layouts against the
// serial plan (the same trainer on one device) with gradAccum =
// microbatches, from the same weights and
// batches: over a matrix of pp in {1,2,4}, schedules gpipe / 1f1b /
// interleaved:2, recompute none / selective / full, tp and dp in {1,2} (sp
// and dropout in some), on tiny GPT (tied wte: its gradient is exchanged
// between the first and last stage) and Llama models, the loss and every
// gradient of one microbatch and the losses of 5 AdamW steps match within
// 1e-5 (normwise relative, f32; runtime/parallel/Verify.cpp justifies the
// tolerance: pipelining changes only where the gradient sums over
// microbatches and tied copies are added, tp/dp the order of additions).
// Also: eager send/recv between pipeline ranks, a failing rank releasing a
// peer blocked in recv, state moving between serial and pipelined layouts,
// the eval loss, and configuration errors before anything runs. One case
// fuses the programs (serial and pipelined alike).
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "passes/pipeline/Pipeline.h"
#include "runtime/Executable.h"
#include "runtime/parallel/Trainer.h"
#include "runtime/parallel/Verify.h"
#include "test/parallel/TinyModels.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

ModelConfig gpt(double dropout = 0, int64_t layers = 4) {
  return test::tinyGpt(dropout, layers);
}
ModelConfig llama(double dropout = 0, int64_t layers = 4) {
  return test::tinyLlama(dropout, layers);
}
TrainOptions training(int64_t microbatches, double gradClip = 1.0) {
  return test::tinyTraining(microbatches, gradClip);
}
DeviceGroupOptions quick() { return test::quickDevices(); }

ParallelConfig pipelined(int64_t pp, const char *schedule, RecomputeMode r,
                         int64_t tp = 1, int64_t dp = 1, bool sp = false) {
  ParallelConfig c;
  c.tp = tp;
  c.dp = dp;
  c.sp = sp;
  c.pp = pp;
  c.schedule = llvm::cantFail(parseScheduleSpec(schedule));
  c.recompute = r;
  return c;
}

struct Case {
  const char *name;
  bool llama;
  int64_t layers;
  int64_t pp;
  const char *schedule;
  RecomputeMode recompute;
  int64_t tp, dp;
  bool sp;
  int64_t microbatches;
  double dropout = 0;
  bool fusion = false; // the stage and optimizer programs fused
  bool zero = false;   // the distributed optimizer (ZeRO-1) over dp
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class PipelineMatchesSerial : public testing::TestWithParam<Case> {};

TEST_P(PipelineMatchesSerial, LossGradientsAndFiveSteps) {
  const Case &c = GetParam();
  VerifyOptions o;
  o.parallel = pipelined(c.pp, c.schedule, c.recompute, c.tp, c.dp, c.sp);
  o.parallel.distributedOptimizer = c.zero;
  o.steps = 5;
  o.devices = quick();
  ModelConfig model =
      c.llama ? llama(c.dropout, c.layers) : gpt(c.dropout, c.layers);
  TrainOptions t = training(c.microbatches);
  t.fusion = c.fusion;
  auto report = verifyParallel(model, t, o);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  size_t params = buildModelGraph(model).params().size();
  // A microbatch's loss and gradients, five steps' losses, and AdamW's two
  // moments of every parameter after the first step.
  ASSERT_EQ(report->diffs.size(), 1 + params + 5 + 2 * params);
  for (const TensorDiff &d : report->diffs) {
    EXPECT_TRUE(d.ok) << d.name << ": relative difference " << d.relDiff;
    EXPECT_GT(d.scale, 0.0) << d.name << " is zero (the check would be empty)";
  }
}

constexpr RecomputeMode kNone = RecomputeMode::None,
                        kSelective = RecomputeMode::Selective,
                        kFull = RecomputeMode::Full;

// Every value of every axis: pp 1/2/4, gpipe/1f1b/interleaved:2,
// none/selective/full, tp 1/2, dp 1/2, ZeRO-1, GPT and Llama.
INSTANTIATE_TEST_SUITE_P(
    Layouts, PipelineMatchesSerial,
    testing::Values(
        Case{"gpt_pp1_selective_tp2", false, 4, 1, "1f1b", kSelective, 2, 1,
             false, 2},
        Case{"llama_pp1_full_dp2", true, 4, 1, "gpipe", kFull, 1, 2, false, 2},
        Case{"gpt_pp2_gpipe", false, 4, 2, "gpipe", kNone, 1, 1, false, 4},
        Case{"gpt_pp2_1f1b_selective_tp2_dp2", false, 4, 2, "1f1b", kSelective,
             2, 2, false, 4},
        Case{"gpt_pp2_interleaved_full_dp2", false, 4, 2, "interleaved:2",
             kFull, 1, 2, false, 4},
        Case{"gpt_pp2_1f1b_dropout_m3", false, 4, 2, "1f1b", kNone, 1, 1, false,
             3, 0.1},
        Case{"gpt_pp2_1f1b_fused_tp2", false, 4, 2, "1f1b", kSelective, 2, 1,
             false, 2, 0, true},
        Case{"gpt_pp2_interleaved_tp2_sp", false, 4, 2, "interleaved:2", kNone,
             2, 1, true, 2},
        Case{"gpt_pp4_1f1b", false, 4, 4, "1f1b", kNone, 1, 1, false, 4},
        Case{"gpt_pp4_gpipe_selective_tp2", false, 4, 4, "gpipe", kSelective, 2,
             1, false, 2},
        Case{"llama_pp2_1f1b_tp2_sp", true, 4, 2, "1f1b", kNone, 2, 1, true, 4},
        Case{"llama_pp2_interleaved_selective", true, 4, 2, "interleaved:2",
             kSelective, 1, 1, false, 2},
        Case{"llama_pp2_gpipe_full_tp2_dp2_dropout", true, 4, 2, "gpipe", kFull,
             2, 2, false, 2, 0.1},
        Case{"llama_pp4_interleaved_8_blocks", true, 8, 4, "interleaved:2",
             kNone, 1, 1, false, 4},
        Case{"llama_pp4_1f1b_full_dp2", true, 4, 4, "1f1b", kFull, 1, 2, false,
             4},
        // ZeRO-1 with pipelining: the tied wte's update on its owner is
        // all-gathered over dp before it is sent to the head's stage.
        Case{"gpt_pp2_1f1b_tp2_dp2_zero", false, 4, 2, "1f1b", kNone, 2, 2,
             false, 4, 0, false, true},
        Case{"llama_pp2_interleaved_dp2_zero_dropout", true, 4, 2,
             "interleaved:2", kSelective, 1, 2, false, 2, 0.1, false, true}),
    [](const auto &info) { return std::string(info.param.name); });

/// Random token ids and next-token labels for microbatch `m` of a step.
BatchFn batches(const ModelConfig &m, const int64_t &step) {
  return [&m, &step](int64_t micro, int32_t *tokens, int32_t *labels) {
    std::mt19937_64 rng(uint64_t(step) * 31 + uint64_t(micro));
    std::uniform_int_distribution<int32_t> id(0, int32_t(m.vocab - 1));
    for (int64_t i = 0; i < m.microBatch * m.seq; ++i) {
      tokens[i] = id(rng);
      labels[i] = id(rng);
    }
  };
}

// The gathered pipelined state (parameters and moments, the tied wte from
// its owner) is the serial initial state exactly; after two steps it is the
// model the pipeline trains: loaded into a serial run it gives the
// pipelined eval loss, which is the serial run's; serial state scattered
// into another layout gathers back unchanged. (Parameters after AdamW steps
// are not compared element by element: where a gradient is near zero,
// m / sqrt(v) turns rounding noise into full-size updates.)
TEST(Trainer, StateAndEvalMatchSerialAndMoveBetweenLayouts) {
  ModelConfig model = gpt();
  Graph fwd = buildModelGraph(model);
  ModelConfig evalModel = model;
  evalModel.dropout = 0;
  Graph eval = buildModelGraph(evalModel);
  TrainOptions t = training(4);
  ParallelConfig c = pipelined(2, "interleaved:2", kSelective, 2, 1);
  auto group = DeviceGroup::inProcess(trainingMesh(c), quick());
  ASSERT_TRUE(bool(group)) << llvm::toString(group.takeError());
  auto pipe = Trainer::create(fwd, eval, t, c, **group);
  ASSERT_TRUE(bool(pipe)) << llvm::toString(pipe.takeError());
  auto one = DeviceGroup::inProcess(trainingMesh(ParallelConfig{}), quick());
  ASSERT_TRUE(bool(one)) << llvm::toString(one.takeError());
  auto serial = Trainer::create(fwd, eval, t, ParallelConfig{}, **one);
  ASSERT_TRUE(bool(serial)) << llvm::toString(serial.takeError());
  ASSERT_FALSE(bool((*pipe)->initParams()));
  ASSERT_FALSE(bool((*serial)->initParams()));
  auto want = (*serial)->gatherState();
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  auto lookup = [&](llvm::StringRef n) -> const HostTensor * {
    auto it = llvm::find_if(*want, [&](auto &w) { return w.first == n; });
    return it == want->end() ? nullptr : &it->second;
  };
  auto initial = (*pipe)->gatherState();
  ASSERT_TRUE(bool(initial)) << llvm::toString(initial.takeError());
  ASSERT_EQ(initial->size(), want->size());
  for (auto &[name, tensor] : *initial) {
    ASSERT_TRUE(lookup(name)) << name;
    EXPECT_EQ(compareTensors(name, tensor, *lookup(name), 0).maxAbsDiff, 0.0)
        << name;
  }

  int64_t step = 0;
  BatchFn batch = batches(model, step);
  for (step = 0; step < 2; ++step) {
    ASSERT_TRUE(bool((*serial)->step(batch)));
    auto s = (*pipe)->step(batch);
    ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  }
  HostTensor tk(TensorType{DType::I32, {model.microBatch, model.seq}}),
      lb = tk.clone();
  batch(0, tk.data<int32_t>(), lb.data<int32_t>());
  auto pe = (*pipe)->evalLoss(tk.data<int32_t>(), lb.data<int32_t>());
  auto se = (*serial)->evalLoss(tk.data<int32_t>(), lb.data<int32_t>());
  ASSERT_TRUE(pe && se);
  // Losses: the tolerance of runtime/parallel/Verify.cpp.
  EXPECT_NEAR(*pe, *se, 1e-5 * std::abs(*se));
  auto trained = (*pipe)->gatherState();
  ASSERT_TRUE(bool(trained));
  auto reloaded = Trainer::create(fwd, eval, t, ParallelConfig{}, **one);
  ASSERT_TRUE(bool(reloaded));
  ASSERT_FALSE(bool(
      (*reloaded)->scatterState([&](llvm::StringRef n) -> const HostTensor * {
        auto it =
            llvm::find_if(*trained, [&](auto &w) { return w.first == n; });
        return it == trained->end() ? nullptr : &it->second;
      })));
  auto re = (*reloaded)->evalLoss(tk.data<int32_t>(), lb.data<int32_t>());
  ASSERT_TRUE(bool(re));
  EXPECT_NEAR(*re, *pe, 1e-5 * std::abs(*pe));

  // Serial state into pp=4 x dp=2 and back: blocks are copies, so exact.
  ParallelConfig c4 = pipelined(4, "1f1b", kNone, 1, 2);
  auto group4 = DeviceGroup::inProcess(trainingMesh(c4), quick());
  ASSERT_TRUE(bool(group4));
  auto pipe4 = Trainer::create(fwd, eval, t, c4, **group4);
  ASSERT_TRUE(bool(pipe4)) << llvm::toString(pipe4.takeError());
  ASSERT_FALSE(bool((*pipe4)->scatterState(lookup)));
  auto back = (*pipe4)->gatherState();
  ASSERT_TRUE(bool(back));
  for (auto &[name, tensor] : *back) {
    ASSERT_TRUE(lookup(name)) << name;
    EXPECT_EQ(compareTensors(name, tensor, *lookup(name), 0).maxAbsDiff, 0.0)
        << name;
  }
  llvm::Error missing =
      (*pipe4)->scatterState([](llvm::StringRef) { return nullptr; });
  EXPECT_NE(llvm::toString(std::move(missing)).find("tensor 'wte' is missing"),
            std::string::npos);
}

/// Rank r's program on mesh<pp=2>: sends `x` with tags 1 and 2 and receives
/// tag 3 (rank 0), or sends tag 3 and receives tags 1 and 2 (rank 1).
Graph exchangeProgram(int64_t rank) {
  Graph g;
  g.name = "exchange" + std::to_string(rank);
  g.mesh = Mesh{{{"pp", 2}}};
  TensorType t{DType::F32, {3}};
  ValueId x = g.addInput("x", t);
  auto send = [&](int64_t tag) {
    g.addNode(OpKind::Send, {x}, {},
              pipeline::sendAttrs(1 - rank, tag, "test", "exchange"), "s");
  };
  auto recv = [&](int64_t tag) {
    int32_t n = g.addNode(
        OpKind::Recv, {}, {t},
        pipeline::recvAttrs(1 - rank, tag, t, "test", "exchange"), "r");
    g.addOutput(g.node(n).results[0]);
  };
  // Both ranks send before they receive: only eager sends get through.
  if (rank == 0) {
    send(1);
    send(2);
    recv(3);
  } else {
    send(3);
    recv(1);
    recv(2);
  }
  return g;
}

TEST(PipelineMessages, EagerSendsReachTheirPeer) {
  auto group = DeviceGroup::inProcess(Mesh{{{"pp", 2}}}, quick());
  ASSERT_TRUE(bool(group));
  DeviceGroup &g = **group;
  Graph programs[2] = {exchangeProgram(0), exchangeProgram(1)};
  std::vector<std::vector<float>> got(2);
  for (uint64_t micro : {0, 1}) {
    llvm::Error e = g.forEachRank([&](size_t l) -> llvm::Error {
      int64_t r = g.globalRank(l);
      auto interp = Executable::create(programs[r], g.device(l));
      if (!interp)
        return interp.takeError();
      float x[3] = {float(r + 1), float(micro), -2.5f};
      std::vector<void *> outs;
      LaunchContext ctx;
      ctx.microbatch = micro;
      if (auto e = (*interp)->run({x}, outs, g.context(l, ctx)))
        return e;
      for (void *o : outs)
        got[r].insert(got[r].end(), static_cast<float *>(o),
                      static_cast<float *>(o) + 3);
      auto c = g.comms(l).group({"pp"});
      return c ? (*c)->waitSends() : c.takeError();
    });
    ASSERT_FALSE(bool(e)) << llvm::toString(std::move(e));
  }
  // Per microbatch: rank 0 got rank 1's x once, rank 1 got rank 0's twice.
  EXPECT_EQ(got[0], (std::vector<float>{2, 0, -2.5f, 2, 1, -2.5f}));
  EXPECT_EQ(got[1], (std::vector<float>{1, 0, -2.5f, 1, 0, -2.5f, 1, 1, -2.5f,
                                        1, 1, -2.5f}));
}

// Rank 1 waits in a recv for a message rank 0 never sends: rank 0's failure
// releases it long before the 60 s timeout.
TEST(PipelineMessages, FailingRankReleasesAPeerInRecv) {
  auto group = DeviceGroup::inProcess(Mesh{{{"pp", 2}}}, quick());
  ASSERT_TRUE(bool(group));
  DeviceGroup &g = **group;
  Graph program = exchangeProgram(1);
  auto start = std::chrono::steady_clock::now();
  llvm::Error e = g.forEachRank([&](size_t l) -> llvm::Error {
    if (g.globalRank(l) == 0) {
      std::this_thread::sleep_for(200ms);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "injected fault");
    }
    auto interp = Executable::create(program, g.device(l));
    if (!interp)
      return interp.takeError();
    float x[3] = {0, 0, 0};
    std::vector<void *> outs;
    return (*interp)->run({x}, outs, g.context(l));
  });
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(secs, 10.0);
  std::string msg = llvm::toString(std::move(e));
  EXPECT_EQ(msg.rfind("rank 0: injected fault (ranks 1 stopped with it)", 0),
            0u)
      << msg;
}

// Configurations that cannot run fail at create, before any device work,
// saying what would fit.
TEST(Trainer, BadConfigurationsFailBeforeRunning) {
  Graph fwd = buildModelGraph(gpt());
  auto expectError = [&](const ParallelConfig &c, int64_t microbatches,
                         const std::string &what) {
    auto group = DeviceGroup::inProcess(trainingMesh(c), quick());
    ASSERT_TRUE(bool(group));
    auto t = Trainer::create(fwd, fwd, training(microbatches), c, **group);
    ASSERT_FALSE(bool(t));
    std::string msg = llvm::toString(t.takeError());
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  expectError(pipelined(8, "1f1b", kNone), 8,
              "8 stages need at least one block each, but the model has 4");
  expectError(pipelined(2, "interleaved:4", kNone), 2,
              "8 stages need at least one block each");
  expectError(pipelined(2, "interleaved:2", kNone), 3,
              "microbatches must be a multiple of 2 (got 3; use 2 or 4");

  // A group of another mesh.
  auto group = DeviceGroup::inProcess(Mesh{{{"dp", 2}, {"tp", 1}}}, quick());
  ASSERT_TRUE(bool(group));
  auto t = Trainer::create(fwd, fwd, training(2), pipelined(2, "1f1b", kNone),
                           **group);
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError())
                .find("needs mesh<pp=2,dp=1,tp=1>, the device group has "
                      "mesh<dp=2,tp=1>"),
            std::string::npos);
}

// What a pipelined step allocates per device against passes/memory's plan
// of the same programs (the runtime runs each program from its buffer plan:
// runtime/Executable.h): parameters, gradients, AdamW state and
// the most stash held at once exactly, the workspace exactly the largest
// planned arena of the rank's programs, and so the peak within 10% of the
// plan's (the plan counts, per instruction, the stash held then plus the
// running program's arena; the runtime keeps the largest arena throughout
// and the eager sends' copies until the step's end, so its peak is the
// plan's or a little more).
TEST(PipelineMemory, RuntimeAllocatesThePlannedBytes) {
  ModelConfig model = gpt(0, 4);
  model.hidden = 64;
  model.headDim = 16;
  model.ffn = 256;
  model.seq = 32;
  Graph fwd = buildModelGraph(model);
  // The fused case's plan is of the fused programs (ParallelCompileOptions).
  struct Case {
    const char *sched;
    bool fused;
  };
  for (auto [sched, fused] :
       {Case{"1f1b", false}, Case{"gpipe", false}, Case{"interleaved:2", false},
        Case{"1f1b", true}}) {
    RecomputeMode rm = sched[0] == '1'   ? kNone
                       : sched[0] == 'g' ? kSelective
                                         : kFull;
    ParallelConfig c = pipelined(2, sched, rm, 2, 1);
    auto group = DeviceGroup::inProcess(trainingMesh(c), quick());
    ASSERT_TRUE(bool(group));
    TrainOptions opts = training(4);
    opts.fusion = fused;
    auto t = Trainer::create(fwd, fwd, opts, c, **group);
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    ASSERT_FALSE(bool((*t)->initParams()));
    int64_t step = 0;
    auto stats = (*t)->step(batches(model, step));
    ASSERT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
    std::vector<MeasuredMemory> got = (*t)->measuredMemory();
    const CompiledPipeline &plan = (*t)->compiled();
    ASSERT_EQ(got.size(), plan.memory.ranks.size());
    for (size_t r = 0; r < got.size(); ++r) {
      SCOPED_TRACE(std::string(sched) + (fused ? " fused" : "") + " rank " +
                   std::to_string(r));
      const RankMemory &want = plan.memory.ranks[r];
      EXPECT_EQ(got[r].parameters, want.parameters);
      EXPECT_EQ(got[r].gradients, want.gradients);
      EXPECT_EQ(got[r].optimizerState, want.optimizerState);
      EXPECT_EQ(got[r].maxStash, want.maxStash);
      int64_t arena = plan.memory.optimizer[r].arenaBytes;
      for (const PipelineStage &s : plan.pipeline.stages)
        if (s.rank == int64_t(r))
          arena = std::max({arena, plan.memory.forward[s.index].arenaBytes,
                            plan.memory.backward[s.index].arenaBytes});
      EXPECT_EQ(got[r].workspace, arena);
      EXPECT_GE(got[r].peak(), want.peak);
      EXPECT_LE(double(got[r].peak()), 1.1 * double(want.peak));
    }
  }
}

} // namespace
} // namespace strata
