//===- MegatronBatchSourceTest.cpp - Batches in Megatron's sample order ---===//
//
// Row r of microbatch m of step s is sample (s * microbatches + m) * B + r,
// tokens its first T ids and labels its last T; the train and valid splits
// are sized as Megatron's training sizes them (equal to the Python
// reference's blend sizes for those counts); a token outside the vocabulary
// is reported, not fed to the model.
//
//===----------------------------------------------------------------------===//
#include "runtime/data/megatron/MegatronBatchSource.h"
#include "test/data/megatron/MegatronTestUtil.h"

namespace strata::megatron {
namespace {

using namespace test;

struct Fixture {
  TempDir dir;
  std::string a = dir.path("a"), b = dir.path("b");
  Fixture() {
    writeCorpus(a, DType::UInt16, randomCorpus(21, 150, 40, 500));
    writeCorpus(b, DType::UInt16, randomCorpus(22, 90, 40, 500));
  }
  MegatronDataConfig config(int64_t vocab) const {
    MegatronDataConfig c;
    c.blend = "0.7 " + a + " 0.3 " + b;
    c.split = "90,10";
    c.batch = 3;
    c.seqLen = 8;
    c.microbatches = 2;
    c.steps = 10;
    c.evalEvery = 5;
    c.evalIters = 2;
    c.seed = 5;
    c.vocabSize = vocab;
    return c;
  }
};

TEST(MegatronBatchSource,
     RowsAreConsecutiveSamplesAndSplitsAreSizedAsMegatron) {
  Fixture f;
  auto s = openMegatronData(f.config(500));
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  ASSERT_TRUE(s->valid);
  // train: steps x global batch = 10 x 6; valid: (10 / 5 + 1) x 2 x 6.
  for (auto [src, split, n] :
       {std::tuple{s->train.get(), 0, 60}, {s->valid.get(), 1, 36}}) {
    llvm::json::Value ref =
        runReference({"blend", f.config(500).blend, "90,10",
                      std::to_string(split), "8", std::to_string(n), "5"});
    EXPECT_EQ(src->split().size(), *ref.getAsObject()->getInteger("size"))
        << split;
  }
  std::vector<int32_t> tokens(3 * 8), labels(3 * 8), sample(9);
  s->train->fill(/*step=*/4, /*microbatch=*/1, tokens.data(), labels.data());
  ASSERT_FALSE(bool(s->train->takeError()));
  for (int64_t r = 0; r < 3; ++r) {
    ASSERT_FALSE(
        bool(s->train->split().sample((4 * 2 + 1) * 3 + r, sample.data())));
    for (int64_t t = 0; t < 8; ++t) {
      EXPECT_EQ(tokens[r * 8 + t], sample[t]);
      EXPECT_EQ(labels[r * 8 + t], sample[t + 1]);
    }
  }
}

TEST(MegatronBatchSource, OutOfVocabularyTokensAreReported) {
  Fixture f;
  auto s = openMegatronData(f.config(/*vocab=*/10)); // the data's ids reach 499
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  std::vector<int32_t> tokens(3 * 8, -1), labels(3 * 8, -1);
  s->train->fill(0, 0, tokens.data(), labels.data());
  std::string e = llvm::toString(s->train->takeError());
  EXPECT_NE(e.find("is outside the vocabulary of 10"), std::string::npos) << e;
  for (int32_t t : tokens)
    EXPECT_TRUE(t >= 0 && t < 10) << "an out-of-range id reached the batch";
  EXPECT_FALSE(bool(s->train->takeError())) << "reported once";
}

TEST(MegatronBatchSource, SeedMustFitNumpy) {
  Fixture f;
  MegatronDataConfig c = f.config(500);
  c.seed = uint64_t(1) << 32;
  auto s = openMegatronData(c);
  ASSERT_FALSE(bool(s));
  EXPECT_NE(
      llvm::toString(s.takeError()).find("does not fit numpy's RandomState"),
      std::string::npos);
}

} // namespace
} // namespace strata::megatron
