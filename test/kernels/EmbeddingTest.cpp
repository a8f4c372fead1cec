//===- EmbeddingTest.cpp - Vocab-parallel gather / scatter-add
//-------------===//
#include "runtime/kernels/Embedding.h"

#include "TestUtil.h"

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

constexpr int64_t V = 6, H = 5, N = 9,
                  kVocabStart = 4; // shard owns ids [4, 10)

TEST(Embedding, ForwardMasksIdsOutsideShard) {
  Rng rng;
  std::vector<double> table = rng.normal(V * H), out(N * H);
  std::vector<int32_t> ids = {4, 9, 3, 10, 0, 7, 7, -1, 5};
  embeddingFwd(table.data(), ids.data(), out.data(), N, V, H, kVocabStart);
  std::vector<double> ref(N * H, 0.0);
  for (int64_t n = 0; n < N; ++n)
    if (ids[n] >= kVocabStart && ids[n] < kVocabStart + V)
      for (int64_t h = 0; h < H; ++h)
        ref[n * H + h] = table[(ids[n] - kVocabStart) * H + h];
  std::vector<int64_t> shape = {N, H};
  EXPECT_TRUE(allClose("embedding", out, ref, 0, 0, shape));
}

TEST(Embedding, ShardsSumToUnshardedLookup) {
  // Two vocab shards [0, 3) and [3, 6): summing their masked lookups (the
  // vocab-parallel all-reduce) gives the unsharded lookup.
  Rng rng;
  std::vector<double> table = rng.normal(V * H), full(N * H), a(N * H),
                      b(N * H);
  std::vector<int32_t> ids = rng.ints(N, 0, V - 1);
  embeddingFwd(table.data(), ids.data(), full.data(), N, V, H);
  embeddingFwd(table.data(), ids.data(), a.data(), N, 3, H, 0);
  embeddingFwd(table.data() + 3 * H, ids.data(), b.data(), N, 3, H, 3);
  for (int64_t i = 0; i < N * H; ++i)
    a[i] += b[i];
  EXPECT_TRUE(allClose("sharded sum", a, full, 0, 0));
}

TEST(Embedding, BackwardFiniteDifferenceAndAccumulates) {
  Rng rng;
  std::vector<double> table = rng.normal(V * H), r = rng.normal(N * H),
                      out(N * H);
  std::vector<int32_t> ids = {4, 9, 3, 10, 4, 7, 7, -1, 4}; // repeats + masked
  // One extra sentinel row past the table: id 10 == vocabStart + V must not
  // write there.
  std::vector<double> base = rng.normal((V + 1) * H), dtable = base;
  embeddingBwd(r.data(), ids.data(), dtable.data(), N, V, H, kVocabStart);
  for (int64_t h = 0; h < H; ++h)
    EXPECT_EQ(dtable[V * H + h], base[V * H + h]) << "sentinel row written";
  std::vector<double> grad(V * H);
  for (int64_t i = 0; i < V * H; ++i)
    grad[i] = dtable[i] - base[i]; // bwd ACCUMULATES on top of `base`
  auto loss = [&] {
    embeddingFwd(table.data(), ids.data(), out.data(), N, V, H, kVocabStart);
    return dot(r, out);
  };
  std::vector<int64_t> shape = {V, H};
  EXPECT_TRUE(gradCheck("embedding dtable", table, grad, loss, 1e-6, shape));
}

} // namespace
