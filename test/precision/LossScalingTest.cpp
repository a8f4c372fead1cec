//===- LossScalingTest.cpp - fp16 loss scaling, scaler and trainer --------===//
//
// The scaler's state machine against a transcription of Megatron-LM's
// DynamicGradScaler (megatron_grad_scaler.py writes its states), and the
// trainer with an injected overflow: the step is skipped on every rank of
// serial, tp x dp and pipelined layouts (nothing updated, the learning rate
// and AdamW's step held), the scale backs off after the hysteresis, a
// resumed run continues bitwise, and training goes on to the f32 loss.
//
//===----------------------------------------------------------------------===//
#include "runtime/parallel/TrainingSession.h"
#include "runtime/train/LossScaler.h"
#include "test/parallel/TinyModels.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace strata {
namespace {

// --- The state machine -----------------------------------------------------

TEST(LossScaler, MatchesMegatronDynamicGradScaler) {
  auto buf = llvm::MemoryBuffer::getFile(STRATA_GRAD_SCALER_REF);
  ASSERT_TRUE(bool(buf)) << STRATA_GRAD_SCALER_REF
                         << ": the reference fixture (megatron_grad_scaler.py) "
                            "did not run";
  auto json = llvm::json::parse((*buf)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *cases = json->getAsObject()->getArray("cases");
  ASSERT_TRUE(cases && cases->size() == 5);
  for (const llvm::json::Value &cv : *cases) {
    const llvm::json::Object &c = *cv.getAsObject();
    std::string name = c.getString("name")->str();
    LossScalerConfig config;
    config.initialScale = *c.getNumber("initial_scale");
    config.minScale = *c.getNumber("min_scale");
    config.window = *c.getInteger("growth_interval");
    config.hysteresis = *c.getInteger("hysteresis");
    ASSERT_FALSE(bool(config.check())) << name;
    LossScaler s(config), resumed(config);
    const llvm::json::Array &flags = *c.getArray("found_inf");
    const llvm::json::Array &scale = *c.getArray("scale");
    size_t backoffs = 0, growths = 0;
    for (size_t i = 0; i < flags.size(); ++i) {
      float before = s.scale();
      s.update(*flags[i].getAsInteger() != 0);
      backoffs += s.scale() < before;
      growths += s.scale() > before;
      // Bitwise: both sides hold the scale in fp32.
      ASSERT_EQ(s.scale(), float(*scale[i].getAsNumber()))
          << name << ", update " << i;
      ASSERT_EQ(s.growthTracker(), *(*c.getArray("growth_tracker"))[i]
                                        .getAsInteger())
          << name << ", update " << i;
      ASSERT_EQ(s.hysteresisTracker(),
                *(*c.getArray("hysteresis_tracker"))[i].getAsInteger())
          << name << ", update " << i;
      // A scaler restored from the state mid-way (a checkpoint's JSON,
      // printed and parsed) goes on identically.
      if (i == flags.size() / 2) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << s.toJSON();
        auto parsed = llvm::json::parse(os.str());
        ASSERT_TRUE(bool(parsed));
        ASSERT_FALSE(bool(resumed.fromJSON(*parsed)));
      } else if (i > flags.size() / 2) {
        resumed.update(*flags[i].getAsInteger() != 0);
        ASSERT_EQ(resumed.scale(), s.scale()) << name << ", update " << i;
      }
    }
    // Each sequence exercises both directions.
    EXPECT_GT(backoffs, 0u) << name;
    EXPECT_GT(growths, 0u) << name;
  }
}

TEST(LossScaler, ConstantScaleNeverMoves) {
  LossScalerConfig c;
  c.staticScale = 1024;
  LossScaler s(c);
  for (bool inf : {true, true, true, false})
    s.update(inf);
  EXPECT_EQ(s.scale(), 1024.0f);
}

TEST(LossScaler, BadNumbersAreRefused) {
  LossScalerConfig c;
  c.minScale = 2 * c.initialScale;
  EXPECT_EQ(llvm::toString(c.check()),
            "--min-loss-scale 8.58993e+09 must be a positive fp32 number at "
            "most the initial scale 4.29497e+09");
  c = LossScalerConfig();
  c.hysteresis = 0;
  EXPECT_EQ(llvm::toString(c.check()),
            "--hysteresis 0 must be at least 1 (steps with inf / nan before "
            "the scale halves)");
}

// --- The trainer -------------------------------------------------------------

/// GPT of test/parallel/TinyModels.h, fp16, 2 microbatches per step.
ModelConfig model() { return test::tinyGpt(0.0, 2); }

TrainOptions fp16(std::vector<int64_t> injectAt) {
  TrainOptions t = test::tinyTraining(2);
  t.schedule = LRSchedule{1e-2, 1e-3, 2, 40};
  t.precision = DType::F16;
  LossScalerConfig c;
  // Small enough that no tiny-model gradient overflows fp16 on its own
  // (the test asserts which steps skip), window 1000 so it never grows.
  c.initialScale = 4096;
  t.lossScaling = c;
  t.injectInfAt = std::move(injectAt);
  return t;
}

/// Learnable tokens of step `step`: each sequence counts up (mod vocab)
/// from a pseudo-random start.
BatchFn batchOf(int64_t step, const ModelConfig &m) {
  return [step, m](int64_t micro, int32_t *tokens, int32_t *labels) {
    uint64_t x = uint64_t(step * 977 + micro * 131 + 1);
    for (int64_t b = 0; b < m.microBatch; ++b) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      int64_t start = int64_t((x >> 33) % uint64_t(m.vocab));
      for (int64_t i = 0; i < m.seq; ++i) {
        tokens[b * m.seq + i] = int32_t((start + i) % m.vocab);
        labels[b * m.seq + i] = int32_t((start + i + 1) % m.vocab);
      }
    }
  };
}

using State = std::vector<std::pair<std::string, HostTensor>>;

bool sameBits(const State &a, const State &b, std::string &which) {
  if (a.size() != b.size())
    return which = "sizes", false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].first != b[i].first || a[i].second.bytes() != b[i].second.bytes() ||
        std::memcmp(a[i].second.raw(), b[i].second.raw(),
                    a[i].second.bytes()) != 0)
      return which = a[i].first, false;
  return true;
}

struct Layout {
  const char *name;
  int64_t tp, dp, pp;
};
void PrintTo(const Layout &l, std::ostream *os) { *os << l.name; }

class InjectedOverflow : public testing::TestWithParam<Layout> {};

// The last rank's gradient overflows at steps 2 and 3: both are skipped on
// every rank (the other ranks' state is untouched too), the learning rate
// and AdamW's step wait, and the scale halves at the second (hysteresis 2).
TEST_P(InjectedOverflow, SkipsOnEveryRankAndBacksOff) {
  const Layout &l = GetParam();
  ParallelConfig c;
  c.tp = l.tp;
  c.dp = l.dp;
  c.pp = l.pp;
  ModelConfig m = model();
  m.microBatch *= l.dp; // micro_batch per dp rank
  Graph forward = buildModelGraph(m);
  TrainOptions o = fp16({2, 3});
  auto s = TrainingSession::create(forward, forward, o, c, nullptr,
                                   test::quickDevices());
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  TrainingSession &t = **s;
  ASSERT_FALSE(bool(t.initParams()));
  std::vector<StepStats> stats;
  State before;
  for (int64_t step = 0; step < 6; ++step) {
    if (step == 2) {
      auto st = t.state();
      ASSERT_TRUE(bool(st)) << llvm::toString(st.takeError());
      before = std::move(*st);
    }
    auto r = t.step(batchOf(step, m));
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    stats.push_back(*r);
    if (step == 3) {
      auto after = t.state();
      ASSERT_TRUE(bool(after)) << llvm::toString(after.takeError());
      std::string which;
      EXPECT_TRUE(sameBits(before, *after, which))
          << which << " changed in a skipped step";
    }
  }
  for (int64_t step = 0; step < 6; ++step) {
    EXPECT_EQ(stats[step].skipped, step == 2 || step == 3) << "step " << step;
    EXPECT_EQ(stats[step].lossScale, step <= 3 ? 4096.0 : 2048.0)
        << "step " << step;
    EXPECT_TRUE(std::isfinite(stats[step].loss));
  }
  // The schedule follows the updates: step 4 runs update 2's rate.
  EXPECT_EQ(stats[4].lr, o.schedule.at(2));
  EXPECT_EQ(t.step(), 6);
  EXPECT_EQ(t.trainer().updates(), 4);
  EXPECT_EQ(t.trainer().lossScaler()->hysteresisTracker(), 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, InjectedOverflow,
                         testing::Values(Layout{"serial", 1, 1, 1},
                                         Layout{"tp2_dp2", 2, 2, 1},
                                         Layout{"pp2", 1, 1, 2},
                                         Layout{"tp2_dp2_pp2", 2, 2, 2}),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

/// Trains `steps` steps of `o` from step `from` of `t`.
void train(TrainingSession &t, int64_t from, int64_t steps,
           std::vector<double> &losses) {
  for (int64_t step = from; step < from + steps; ++step) {
    auto r = t.step(batchOf(step, model()));
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    losses.push_back(r->loss);
  }
}

// A run stopped after the backoff and resumed from its state, step counts
// and scaler state continues bitwise: the overflow at step 6 halves the
// scale at once only if the restored hysteresis is spent.
TEST(LossScaling, ResumesBitwise) {
  Graph forward = buildModelGraph(model());
  TrainOptions o = fp16({2, 3, 6});
  auto whole = TrainingSession::create(forward, forward, o, {});
  ASSERT_TRUE(bool(whole)) << llvm::toString(whole.takeError());
  ASSERT_FALSE(bool((*whole)->initParams()));
  std::vector<double> want, got;
  train(**whole, 0, 8, want);
  EXPECT_EQ((*whole)->trainer().lossScaler()->scale(), 1024.0f);

  auto first = TrainingSession::create(forward, forward, o, {});
  ASSERT_TRUE(bool(first));
  ASSERT_FALSE(bool((*first)->initParams()));
  train(**first, 0, 5, got);
  auto state = (*first)->state();
  ASSERT_TRUE(bool(state));
  llvm::json::Value scaler = (*first)->trainer().lossScaler()->toJSON();
  int64_t updates = (*first)->trainer().updates();

  auto second = TrainingSession::create(forward, forward, o, {});
  ASSERT_TRUE(bool(second));
  ASSERT_FALSE(bool((*second)->initParams()));
  ASSERT_FALSE(bool((*second)->loadState(
      [&](llvm::StringRef n) -> const HostTensor * {
        for (auto &[name, t] : *state)
          if (name == n)
            return &t;
        return nullptr;
      })));
  (*second)->setStep(5);
  (*second)->trainer().setUpdates(updates);
  ASSERT_FALSE(bool((*second)->trainer().lossScaler()->fromJSON(scaler)));
  train(**second, 5, 3, got);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "step " << i; // bitwise
  EXPECT_EQ((*second)->trainer().lossScaler()->scale(), 1024.0f);
}

// Two skipped steps early on, then fp16 training reaches the f32 run's loss.
TEST(LossScaling, TrainingContinuesToTheF32Loss) {
  Graph forward = buildModelGraph(model());
  TrainOptions f32 = fp16({});
  f32.precision = DType::F32;
  f32.lossScaling.reset();
  std::vector<double> a, b;
  for (auto [o, losses] : {std::pair{f32, &a}, std::pair{fp16({2, 3}), &b}}) {
    auto s = TrainingSession::create(forward, forward, o, {});
    ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
    ASSERT_FALSE(bool((*s)->initParams()));
    train(**s, 0, 40, *losses);
  }
  auto mean = [](const std::vector<double> &l) {
    return (l[37] + l[38] + l[39]) / 3;
  };
  // The run learns (from ln 30 = 3.4), and two skipped updates of 40 plus
  // fp16's rounding cost at most 5% of the f32 run's progress.
  EXPECT_LT(mean(a), a[0] - 0.3);
  EXPECT_NEAR(mean(b), mean(a), 0.05 * (a[0] - mean(a)));
  std::printf("f32 loss %.4f -> %.4f, fp16 with two skipped steps -> %.4f\n",
              a[0], mean(a), mean(b));
}

} // namespace
} // namespace strata
