//===- GradReduceDtypeTest.cpp - 16-bit data-parallel gradient reduction --===//
//
// `--grad-reduce-dtype bf16|fp16` (runtime/parallel/GradReduceDtype.h)
// against the fp32 reduction, on a bf16 tiny GPT at dp 2 with two
// microbatches, plain (all_reduce) and ZeRO-1 (reduce_scatter). One
// optimizer step from the same initial parameters and data: AdamW's first
// moment is then m = (1 - beta1) c g, with g the reduced gradient and c the
// clipping factor max_norm / ||g|| (tinyTraining clips at 1), so m shows
// the reduced gradient directly.
//
// The bound: each rank's fp32 contribution g_i and the sum round once to
// the 16-bit type (unit roundoff u: 2^-8 bf16, 2^-11 fp16), so the reduced
// gradient is off by ||d|| <= u (||g_0|| + ||g_1|| + ||g||). The two
// ranks' gradients of one untrained model on batches of one distribution
// point the same way (non-negative inner product), so ||g_0|| + ||g_1|| <=
// 2 ||g|| and ||d|| <= 3u ||g||; c moves by as much relatively, so m by at
// most 6u normwise. And the reduction must round: m differs from the fp32
// run's by more than u / 64 (random roundings of thousands of elements
// give about u / 3; a run that did not round would give 0).
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "runtime/parallel/Trainer.h"
#include "test/parallel/TinyModels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace strata {
namespace {

using State = std::vector<std::pair<std::string, HostTensor>>;

/// The state after one step of the bf16 tiny GPT at dp 2 whose gradients
/// are reduced in `dtype`.
State oneStep(bool zero, DType dtype) {
  ParallelConfig c;
  c.dp = 2;
  c.distributedOptimizer = zero;
  auto group = DeviceGroup::inProcess(trainingMesh(c), test::quickDevices());
  if (!group) {
    ADD_FAILURE() << llvm::toString(group.takeError());
    return {};
  }
  ModelConfig m = test::tinyGpt(0, 2);
  Graph f = buildModelGraph(m);
  TrainOptions t = test::tinyTraining(2);
  t.precision = DType::BF16;
  t.gradReduce.dtype = dtype;
  auto tr = Trainer::create(f, f, t, c, **group);
  if (!tr) {
    ADD_FAILURE() << llvm::toString(tr.takeError());
    return {};
  }
  EXPECT_FALSE(bool((*tr)->initParams()));
  auto stats = (*tr)->step([&](int64_t micro, int32_t *tk, int32_t *lb) {
    std::mt19937 rng(unsigned(micro + 1));
    for (int64_t i = 0; i < m.microBatch * m.seq; ++i) {
      tk[i] = int32_t(rng() % m.vocab);
      lb[i] = int32_t(rng() % m.vocab);
    }
  });
  EXPECT_TRUE(bool(stats)) << llvm::toString(stats.takeError());
  auto st = (*tr)->gatherState();
  EXPECT_TRUE(bool(st)) << llvm::toString(st.takeError());
  return st ? std::move(*st) : State();
}

/// ||a - b|| / ||b|| over every first moment `adam_m.*` together.
double firstMomentDistance(const State &a, const State &b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0, norm = 0;
  int64_t moments = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    if (a[i].first.rfind("adam_m.", 0) != 0)
      continue;
    ++moments;
    const HostTensor &x = a[i].second, &y = b[i].second;
    EXPECT_EQ(x.type(), y.type()) << a[i].first;
    for (int64_t k = 0; k < y.numElements(); ++k) {
      double d = x.get(k) - y.get(k);
      diff += d * d;
      norm += y.get(k) * y.get(k);
    }
  }
  EXPECT_GT(moments, 0);
  return norm > 0 ? std::sqrt(diff / norm) : INFINITY;
}

struct Case {
  bool zero;
  DType dtype;
  double u; // unit roundoff
};

class GradReduceDtype : public testing::TestWithParam<Case> {};

TEST_P(GradReduceDtype, WithinItsRoundoffOfTheF32Reduction) {
  Case p = GetParam();
  State f32 = oneStep(p.zero, DType::F32);
  State half = oneStep(p.zero, p.dtype);
  double d = firstMomentDistance(half, f32);
  std::cout << dtypeName(p.dtype).str() << (p.zero ? " ZeRO-1" : "")
            << ": first moments " << d << " from the fp32 reduction (u "
            << p.u << ")\n";
  EXPECT_LE(d, 6 * p.u);
  EXPECT_GT(d, p.u / 64);
}

INSTANTIATE_TEST_SUITE_P(
    Dp2, GradReduceDtype,
    testing::Values(Case{false, DType::BF16, std::ldexp(1.0, -8)},
                    Case{true, DType::BF16, std::ldexp(1.0, -8)},
                    Case{false, DType::F16, std::ldexp(1.0, -11)}),
    [](const auto &info) {
      return dtypeName(info.param.dtype).str() +
             (info.param.zero ? "_zero1" : "_allreduce");
    });

} // namespace
} // namespace strata
