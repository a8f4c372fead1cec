//===- ParallelTest.cpp - parallelFor coverage and thread-count invariance
//-===//
#include "runtime/kernels/Kernels.h"

#include "TestUtil.h"

#include <atomic>

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

/// Restores the global thread count when a test ends.
struct ThreadCountGuard {
  int saved = getNumThreads();
  ~ThreadCountGuard() { setNumThreads(saved); }
};

TEST(Parallel, CoversRangeExactlyOnce) {
  ThreadCountGuard guard;
  for (int threads : {1, 3, 8})
    for (int64_t grain : {1, 7, 1000}) {
      setNumThreads(threads);
      std::vector<std::atomic<int>> hits(1234);
      parallelFor(5, 1234, grain, [&](int64_t lo, int64_t hi) {
        EXPECT_LE(5, lo);
        EXPECT_LE(hi, 1234);
        for (int64_t i = lo; i < hi; ++i)
          hits[i]++;
      });
      for (int64_t i = 0; i < 1234; ++i)
        ASSERT_EQ(hits[i].load(), i >= 5 ? 1 : 0)
            << "i " << i << " threads " << threads;
    }
  int calls = 0;
  parallelFor(3, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(Parallel, NestedCallsRunInline) {
  ThreadCountGuard guard;
  setNumThreads(4);
  std::atomic<int64_t> sum{0};
  parallelFor(0, 8, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      parallelFor(0, 100, 1, [&](int64_t a, int64_t b) {
        for (int64_t j = a; j < b; ++j)
          sum += j;
      });
  });
  EXPECT_EQ(sum.load(), 8 * 4950);
}

TEST(Parallel, SetNumThreadsClamps) {
  ThreadCountGuard guard;
  setNumThreads(0);
  EXPECT_EQ(getNumThreads(), 1);
  setNumThreads(6);
  EXPECT_EQ(getNumThreads(), 6);
}

TEST(Parallel, ResultsIndependentOfThreadCount) {
  // The reference tests use small shapes that run on one thread. Here shapes
  // are big enough to split into several chunks, and every kernel's output
  // with 4 threads must equal its 1-thread output bitwise: this covers the
  // chunking, and that reductions (dw/db, dk/dv over query heads, column
  // sums, the CE mean) do not depend on how rows are split.
  ThreadCountGuard guard;
  Rng rng;
  const int64_t N = 300, C = 130;
  auto randf = [&](int64_t n) { return cast<float>(rng.normal(n)); };
  std::vector<float> x = randf(N * C), dy = randf(N * C), w = randf(C),
                     b = randf(C);
  std::vector<int32_t> labels = rng.ints(N, -1, C - 1);
  AttentionDims ad{2, 64, 4, 1, 16};
  int64_t qn = ad.B * ad.S * ad.Hq * ad.D, kn = ad.B * ad.S * ad.Hkv * ad.D;
  std::vector<float> q = randf(qn), k = randf(kn), v = randf(kn),
                     dout = randf(qn);
  auto run = [&](int threads) {
    setNumThreads(threads);
    std::vector<std::vector<float>> outs;
    auto out = [&](size_t n) -> float * { return outs.emplace_back(n).data(); };
    std::vector<int64_t> shape = {N, C}, axes = {0}, perm = {1, 0},
                         bShape = {C};
    layerNormFwd(x.data(), w.data(), b.data(), out(N * C), N, C, 1e-5);
    layerNormBwd(dy.data(), x.data(), w.data(), out(N * C), out(C), out(C), N,
                 C, 1e-5);
    rmsNormBwd(dy.data(), x.data(), w.data(), out(N * C), out(C), N, C, 1e-5);
    softmaxFwd(x.data(), out(N * C), N, C);
    out(1)[0] = crossEntropyFwd(x.data(), labels.data(), N, C);
    crossEntropyBwd(0.5f, x.data(), labels.data(), out(N * C), N, C);
    reduceSum(x.data(), shape, axes, out(C));
    transpose(x.data(), shape, perm, out(N * C));
    binaryFwd(BinaryOp::Mul, x.data(), shape, w.data(), bShape, out(N * C),
              shape);
    unaryFwd(UnaryOp::GeluTanh, x.data(), out(N * C), N * C);
    dropoutFwd(x.data(), out(N * C), shape, shape, std::vector<int64_t>{0, 0},
               0.2, 1, 2, 3);
    attentionFwd(q.data(), k.data(), v.data(), out(qn), ad, true, 0.35);
    attentionBwd(dout.data(), q.data(), k.data(), v.data(), out(qn), out(kn),
                 out(kn), ad, true, 0.35);
    return outs;
  };
  auto one = run(1), four = run(4);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i)
    EXPECT_EQ(one[i], four[i]) << "output " << i;
}

TEST(Parallel, LongRowsSplitIntoSegments) {
  // Views that coalesce to a few rows longer than one segment (16K elements)
  // are cut into segments; check segment offsets on strided and broadcast
  // operands against single-threaded / naive results.
  ThreadCountGuard guard;
  setNumThreads(4);
  const int64_t L = 40001;
  Rng rng;
  std::vector<double> x = rng.normal(3 * L), y(3 * 2 * L);
  std::vector<int64_t> xs = {3, 1, L}, ys = {3, 2, L};
  broadcastTo(x.data(), xs, y.data(), ys);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < L; c += 997)
        ASSERT_EQ(y[(a * 2 + b) * L + c], x[a * L + c])
            << a << " " << b << " " << c;
  // Transpose [L, 3] -> [3, L]: long rows read with stride 3.
  std::vector<double> t(3 * L);
  std::vector<int64_t> ts = {L, 3}, perm = {1, 0};
  transpose(x.data(), ts, perm, t.data());
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t c = 0; c < L; c += 997)
      ASSERT_EQ(t[a * L + c], x[c * 3 + a]) << a << " " << c;
  // Dropout block [2, 20000] at offsets [1, 15000] of a [3, 40001] tensor.
  std::vector<int64_t> global = {3, L}, local = {2, 20000},
                       offsets = {1, 15000};
  std::vector<float> ones(3 * L, 1.0f), full(3 * L), block(2 * 20000, 1.0f);
  setNumThreads(1);
  dropoutFwd(ones.data(), full.data(), global, global,
             std::vector<int64_t>{0, 0}, 0.5, 9, 8, 7);
  setNumThreads(4);
  dropoutFwd(block.data(), block.data(), local, global, offsets, 0.5, 9, 8, 7);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t c = 0; c < 20000; ++c)
      ASSERT_EQ(block[a * 20000 + c], full[(a + 1) * L + 15000 + c])
          << a << " " << c;
}

} // namespace
