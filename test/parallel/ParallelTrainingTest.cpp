//===- ParallelTrainingTest.cpp - Parallel training equals serial training
//-===//
//
// For tiny GPT and Llama models, every parallel layout of the matrix below
// (tp in {1,2,4}, sp on/off, dp in {1,2}, distributed optimizer on/off,
// dropout on/off, gradient accumulation) runs on in-process CPU devices
// against the serial plan (the Trainer on one device) from the same weights
// and batches: the loss and
// every parameter gradient of one microbatch, and the losses of 5 AdamW
// steps, must match within 1e-5 (normwise relative, f32; the tolerance is
// justified in runtime/parallel/Verify.cpp: only the order of additions
// differs, which moves f32 results by ~1e-7 here). Also: bitwise-
// reproducible parallel runs, and a checkpoint's state moving between
// layouts. (The optimizer programs' dp layout and the in-place gradient
// reduction: GradReduceTest.)
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "runtime/parallel/Trainer.h"
#include "runtime/parallel/Verify.h"
#include "test/parallel/TinyModels.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace strata {
namespace {

using namespace std::chrono_literals;

ModelConfig gpt(double dropout = 0) { return test::tinyGpt(dropout, 2); }
ModelConfig llama(double dropout = 0) { return test::tinyLlama(dropout, 2); }
TrainOptions training(int64_t gradAccum = 1, double gradClip = 1.0) {
  return test::tinyTraining(gradAccum, gradClip);
}
DeviceGroupOptions quick() { return test::quickDevices(); }

struct Case {
  const char *name;
  bool llama;
  int64_t tp, dp;
  bool sp, zero;
  double dropout;
  int64_t gradAccum;
  double gradClip = 1.0;
  /// Sequences per microbatch of the logical graph: micro_batch x dp.
  int64_t batch = 4;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class MatchesSerial : public testing::TestWithParam<Case> {};

TEST_P(MatchesSerial, LossGradientsAndFiveSteps) {
  const Case &c = GetParam();
  VerifyOptions o;
  o.parallel.tp = c.tp;
  o.parallel.dp = c.dp;
  o.parallel.sp = c.sp;
  o.parallel.distributedOptimizer = c.zero;
  o.steps = 5;
  o.devices = quick();
  ModelConfig model = c.llama ? llama(c.dropout) : gpt(c.dropout);
  model.microBatch = c.batch;
  auto report = verifyParallel(model, training(c.gradAccum, c.gradClip), o);
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

INSTANTIATE_TEST_SUITE_P(
    Layouts, MatchesSerial,
    testing::Values(
        Case{"gpt_tp2", false, 2, 1, false, false, 0, 1},
        Case{"gpt_tp4", false, 4, 1, false, false, 0, 1},
        Case{"gpt_tp4_sp", false, 4, 1, true, false, 0, 1},
        Case{"gpt_dp2", false, 1, 2, false, false, 0, 1},
        Case{"gpt_dp2_zero", false, 1, 2, false, true, 0, 1},
        // Without clipping the update takes the gradient input directly.
        Case{"gpt_tp2_dp2_zero_noclip", false, 2, 2, false, true, 0, 1, 0.0},
        Case{"gpt_tp2_dp2_sp", false, 2, 2, true, false, 0, 1},
        Case{"gpt_tp2_dp2_sp_zero_dropout", false, 2, 2, true, true, 0.1, 1},
        Case{"gpt_tp2_sp_dropout_accum2", false, 2, 1, true, false, 0.1, 2},
        Case{"llama_tp1", true, 1, 1, false, false, 0, 1},
        Case{"llama_tp2_sp", true, 2, 1, true, false, 0, 1},
        Case{"llama_tp4", true, 4, 1, false, false, 0, 1},
        Case{"llama_tp2_dp2_zero", true, 2, 2, false, true, 0, 1},
        Case{"llama_tp2_dp2_sp_dropout", true, 2, 2, true, false, 0.1, 1},
        Case{"llama_tp4_dp2_sp_zero_dropout_accum2", true, 4, 2, true, true,
             0.1, 2},
        // Micro batch 1 per data-parallel rank, as every published large
        // run: sequence parallelism takes the path of larger batches.
        Case{"gpt_tp4_sp_batch1", false, 4, 1, true, false, 0, 1, 1.0, 1},
        Case{"gpt_tp2_sp_dropout_batch1_accum2", false, 2, 1, true, false, 0.1,
             2, 1.0, 1},
        Case{"gpt_tp2_dp2_sp_zero_batch1", false, 2, 2, true, true, 0, 1, 1.0,
             2},
        Case{"llama_tp2_sp_batch1", true, 2, 1, true, false, 0, 1, 1.0, 1}),
    [](const auto &info) { return std::string(info.param.name); });

llvm::Expected<CompiledPipeline> compile(const ParallelConfig &c) {
  TrainOptions t = training();
  t.optimizer.grad_clip = 1.0;
  return compilePipeline(buildModelGraph(gpt()), trainingCompileOptions(c, t));
}

bool contains(const std::string &text, const std::string &what) {
  return text.find(what) != std::string::npos;
}

TEST(ParallelPlan, ConfigErrorsComeFirstWithTheFix) {
  ParallelConfig c;
  c.tp = 3;
  auto p = compile(c);
  ASSERT_FALSE(bool(p));
  EXPECT_TRUE(
      contains(llvm::toString(p.takeError()),
               "attention heads 4 (layers.0.attn) not divisible by tp 3"));
  c.tp = 1;
  c.dp = 3;
  p = compile(c);
  ASSERT_FALSE(bool(p));
  EXPECT_TRUE(contains(llvm::toString(p.takeError()),
                       "batch 4 of %tokens not divisible by dp 3"));
  c.dp = 1;
  c.sp = true;
  p = compile(c);
  ASSERT_FALSE(bool(p));
  EXPECT_TRUE(contains(llvm::toString(p.takeError()), "but tp is 1"));
}

/// Losses of `steps` steps of a parallel run on random batches.
std::vector<double> parallelLosses(
    const ModelConfig &m, const ParallelConfig &c, int64_t steps,
    std::vector<std::pair<std::string, HostTensor>> *state = nullptr) {
  auto group = DeviceGroup::inProcess(trainingMesh(c), quick());
  EXPECT_TRUE(bool(group));
  Graph f = buildModelGraph(m);
  auto t = Trainer::create(f, f, training(), c, **group);
  EXPECT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_FALSE(bool((*t)->initParams()));
  std::vector<double> losses;
  for (int64_t s = 0; s < steps; ++s) {
    auto stats = (*t)->step([&](int64_t micro, int32_t *tk, int32_t *lb) {
      std::mt19937 rng(unsigned(s * 10 + micro));
      for (int64_t i = 0; i < m.microBatch * m.seq; ++i) {
        tk[i] = int32_t(rng() % m.vocab);
        lb[i] = int32_t(rng() % m.vocab);
      }
    });
    EXPECT_TRUE(bool(stats));
    losses.push_back(stats->loss);
  }
  if (state) {
    auto st = (*t)->gatherState();
    EXPECT_TRUE(bool(st));
    *state = std::move(*st);
  }
  return losses;
}

TEST(Trainer, RunsAreBitwiseReproducible) {
  ParallelConfig c;
  c.tp = 2;
  c.dp = 2;
  c.sp = true;
  c.distributedOptimizer = true;
  std::vector<double> a = parallelLosses(gpt(0.1), c, 3),
                      b = parallelLosses(gpt(0.1), c, 3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[2]);
}

// The state of a tp=2 dp=2 ZeRO run, loaded into a tp=4 run, gives the same
// evaluation loss: checkpoints are logical tensors, not shards.
TEST(Trainer, StateMovesBetweenLayouts) {
  ParallelConfig from;
  from.tp = 2;
  from.dp = 2;
  from.distributedOptimizer = true;
  std::vector<std::pair<std::string, HostTensor>> state;
  parallelLosses(gpt(), from, 2, &state);
  ASSERT_EQ(state.size(), 3 * buildModelGraph(gpt()).params().size());
  EXPECT_EQ(state[0].first, "wte");
  EXPECT_EQ(state[0].second.type().str(), "f32[32,16]");

  ParallelConfig to;
  to.tp = 4;
  auto group = DeviceGroup::inProcess(trainingMesh(to), quick());
  ASSERT_TRUE(bool(group));
  Graph f = buildModelGraph(gpt());
  auto t = Trainer::create(f, f, training(), to, **group);
  ASSERT_TRUE(bool(t));
  llvm::StringMap<const HostTensor *> byName;
  for (auto &[n, x] : state)
    byName[n] = &x;
  ASSERT_FALSE(bool(
      (*t)->scatterState([&](llvm::StringRef n) { return byName.lookup(n); })));
  auto again = (*t)->gatherState();
  ASSERT_TRUE(bool(again));
  for (size_t i = 0; i < state.size(); ++i)
    for (int64_t j = 0; j < state[i].second.numElements(); ++j)
      ASSERT_EQ((*again)[i].second.get(j), state[i].second.get(j))
          << state[i].first;

  byName.erase("adam_v.wpe");
  llvm::Error e =
      (*t)->scatterState([&](llvm::StringRef n) { return byName.lookup(n); });
  EXPECT_TRUE(
      contains(llvm::toString(std::move(e)), "tensor 'adam_v.wpe' is missing"));
}

// With activations, every value both microbatch programs name is compared,
// partial sums (the row-parallel matmul before its all_reduce) and split
// values (sequence-parallel norms) put back together first.
TEST(Verify, ComparesEveryValueBothPlansCompute) {
  VerifyOptions o;
  o.parallel.tp = 2;
  o.parallel.dp = 2;
  o.parallel.sp = true;
  o.steps = 1;
  o.activations = true;
  o.devices = quick();
  auto report = verifyParallel(gpt(0.1), training(), o);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  std::set<std::string> names;
  for (const TensorDiff &d : report->diffs) {
    names.insert(d.name);
    EXPECT_TRUE(d.ok) << d.name << ": relative difference " << d.relDiff;
  }
  for (const char *v :
       {"embed.dropout", "layers.0.ln1.layer_norm", "layers.0.attn.attention",
        "layers.0.mlp.fc2.matmul", "layers.1.mlp.residual.add",
        "d.layers.0.attn.attention"})
    EXPECT_TRUE(names.count(v)) << v;
  EXPECT_GT(report->diffs.size(), 100u);
}

TEST(Verify, CompareTensorsUsesTheFloorAndCatchesNaN) {
  HostTensor a(TensorType{DType::F32, {2}}), b(TensorType{DType::F32, {2}});
  a.set(0, 1e-12);
  b.set(0, 2e-12);
  EXPECT_FALSE(compareTensors("x", a, b, 1e-5).ok);
  EXPECT_TRUE(compareTensors("x", a, b, 1e-5, 1e-6).ok);
  a.set(1, NAN);
  EXPECT_FALSE(compareTensors("x", a, b, 1e-5, 1e-6).ok);
}

} // namespace
} // namespace strata
