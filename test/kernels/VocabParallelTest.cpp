//===- VocabParallelTest.cpp - pick_label / one_hot against serial
//----------===//
#include "runtime/kernels/VocabParallel.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

constexpr int64_t N = 7, V = 12;

template <typename T> class VocabParallel : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(VocabParallel, Types);

// Serial references: the full vocab, c0 = 0.
std::vector<double> pickRef(const std::vector<double> &x,
                            const std::vector<int32_t> &labels) {
  std::vector<double> out(N);
  for (int64_t n = 0; n < N; ++n)
    out[n] = x[n * V + labels[n]];
  return out;
}

TYPED_TEST(VocabParallel, PickLabelUnshardedIsTheTargetColumn) {
  using T = TypeParam;
  Rng rng;
  std::vector<T> x = cast<T>(rng.normal(N * V));
  std::vector<int32_t> labels = rng.ints(N, 0, V - 1);
  std::vector<T> out(N);
  pickLabel(x.data(), labels.data(), out.data(), N, V);
  std::vector<double> ref =
      pickRef(std::vector<double>(x.begin(), x.end()), labels);
  EXPECT_TRUE(allClose("pick_label", out, ref, 0, 0));
}

TYPED_TEST(VocabParallel, PickLabelShardsSumToSerial) {
  // Three vocab shards of 4 columns: only the owner of each label picks it,
  // so the all-reduce sum of the shards equals the serial pick.
  using T = TypeParam;
  Rng rng;
  std::vector<T> x = cast<T>(rng.normal(N * V));
  std::vector<int32_t> labels = rng.ints(N, 0, V - 1);
  std::vector<double> sum(N, 0.0);
  constexpr int64_t C = 4;
  for (int64_t shard = 0; shard < V / C; ++shard) {
    std::vector<T> block(N * C), out(N);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        block[n * C + c] = x[n * V + shard * C + c];
    pickLabel(block.data(), labels.data(), out.data(), N, C, shard * C);
    for (int64_t n = 0; n < N; ++n)
      sum[n] += double(out[n]);
  }
  std::vector<double> ref =
      pickRef(std::vector<double>(x.begin(), x.end()), labels);
  EXPECT_TRUE(allClose("sharded pick_label", sum, ref, 0, 0));
}

TYPED_TEST(VocabParallel, OneHotShardsConcatenateToSerial) {
  using T = TypeParam;
  Rng rng;
  std::vector<int32_t> labels = rng.ints(N, 0, V - 1);
  std::vector<T> full(N * V);
  oneHot(labels.data(), full.data(), N, V);
  std::vector<double> ref(N * V, 0.0);
  for (int64_t n = 0; n < N; ++n)
    ref[n * V + labels[n]] = 1.0;
  EXPECT_TRUE(allClose("one_hot", full, ref, 0, 0));
  constexpr int64_t C = 6;
  std::vector<double> joined(N * V);
  for (int64_t shard = 0; shard < V / C; ++shard) {
    std::vector<T> block(N * C, T(7)); // overwritten, not accumulated
    oneHot(labels.data(), block.data(), N, C, shard * C);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        joined[n * V + shard * C + c] = double(block[n * C + c]);
  }
  EXPECT_TRUE(allClose("sharded one_hot", joined, ref, 0, 0));
}

} // namespace
