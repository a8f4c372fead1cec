//===- BitwiseRuns.h - Three training steps, compared bit for bit ---------===//
//
// The overlap tests (GradReduceTest, ParamGatherTest) train the same model
// twice, changing only when communication runs, and require the losses and
// the whole gathered state (parameters, AdamW moments) to be bitwise equal.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/Models.h"
#include "runtime/Trace.h"
#include "runtime/parallel/Trainer.h"
#include "test/parallel/TinyModels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>

namespace strata::test {

struct TrainRun {
  std::vector<double> losses;
  std::vector<std::pair<std::string, HostTensor>> state;
};

/// Three steps of model `m` over layout `c` on in-process devices `d`, the
/// tokens drawn from a generator seeded by step and microbatch; `trace`
/// (may be null) records them; `setup` (may be null) sees the devices
/// first. Failures are test failures (empty result).
inline TrainRun
trainThreeSteps(const ModelConfig &m, const ParallelConfig &c,
                const DeviceGroupOptions &d, const TrainOptions &t,
                Trace *trace,
                const std::function<void(DeviceGroup &)> &setup = nullptr) {
  auto group = DeviceGroup::inProcess(trainingMesh(c), d);
  if (!group) {
    ADD_FAILURE() << llvm::toString(group.takeError());
    return {};
  }
  if (setup)
    setup(**group);
  Graph f = buildModelGraph(m);
  auto tr = Trainer::create(f, f, t, c, **group);
  if (!tr) {
    ADD_FAILURE() << llvm::toString(tr.takeError());
    return {};
  }
  EXPECT_FALSE(bool((*tr)->initParams()));
  (*tr)->setTrace(trace);
  TrainRun run;
  for (int64_t s = 0; s < 3; ++s) {
    auto stats = (*tr)->step([&](int64_t micro, int32_t *tk, int32_t *lb) {
      std::mt19937 rng(unsigned(s * 10 + micro));
      for (int64_t i = 0; i < m.microBatch * m.seq; ++i) {
        tk[i] = int32_t(rng() % m.vocab);
        lb[i] = int32_t(rng() % m.vocab);
      }
    });
    EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
    run.losses.push_back(stats ? stats->loss : 0);
  }
  (*tr)->setTrace(nullptr);
  auto st = (*tr)->gatherState();
  EXPECT_TRUE(bool(st)) << llvm::toString(st.takeError());
  if (st)
    run.state = std::move(*st);
  return run;
}

inline void expectBitwiseEqual(const TrainRun &a, const TrainRun &b) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0)
        << "step " << i + 1 << " loss " << a.losses[i] << " vs " << b.losses[i];
  ASSERT_EQ(a.state.size(), b.state.size());
  for (size_t i = 0; i < a.state.size(); ++i) {
    const HostTensor &x = a.state[i].second, &y = b.state[i].second;
    ASSERT_EQ(x.type(), y.type()) << a.state[i].first;
    EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.bytes()), 0)
        << a.state[i].first << " differs";
  }
}

} // namespace strata::test
