//===- BatchSamplerTest.cpp - Random batches, determinism and resume ------===//
#include "runtime/data/BatchSampler.h"

#include "test/io/TestFiles.h"

#include <gtest/gtest.h>

#include <set>

using namespace strata;
using strata::test::message;
using strata::test::TempDir;
using strata::test::writeBytes;

namespace {

/// A dataset of `n` bytes whose tokens are not periodic in any short period,
/// so a window identifies its offset.
class SamplerTest : public ::testing::Test {
protected:
  TokenSpan makeData(int64_t n) {
    std::string text;
    uint32_t x = 12345;
    for (int64_t i = 0; i < n; ++i) {
      x = x * 1103515245u + 12345u;
      text += char(x >> 24);
    }
    std::string path = tmp_.path("data" + std::to_string(n) + ".bin");
    writeBytes(path, text);
    auto ds = TokenDataset::open(path, Tokenizer::byteLevel());
    if (!ds)
      llvm::report_fatal_error(ds.takeError());
    return ds->all();
  }

  static BatchSampler makeSampler(TokenSpan data, SamplerConfig c) {
    auto s = BatchSampler::create(std::move(data), c);
    if (!s)
      llvm::report_fatal_error(s.takeError());
    return std::move(*s);
  }

  TempDir tmp_;
};

struct Batch {
  std::vector<int32_t> tokens, labels;
  bool operator==(const Batch &o) const {
    return tokens == o.tokens && labels == o.labels;
  }
};

Batch draw(const BatchSampler &s, int64_t step, int64_t micro) {
  int64_t n = s.config().batch * s.config().seqLen;
  Batch b{std::vector<int32_t>(n, -1), std::vector<int32_t>(n, -1)};
  s.fill(step, micro, b.tokens.data(), b.labels.data());
  return b;
}

Batch next(BatchSampler &s) {
  int64_t n = s.config().batch * s.config().seqLen;
  Batch b{std::vector<int32_t>(n, -1), std::vector<int32_t>(n, -1)};
  s.next(b.tokens.data(), b.labels.data());
  return b;
}

TEST_F(SamplerTest, RowsAreWindowsAndLabelsAreShiftedTokens) {
  TokenSpan data = makeData(500);
  SamplerConfig c;
  c.batch = 4, c.seqLen = 16, c.seed = 7;
  BatchSampler s = makeSampler(data, c);
  for (int64_t step = 0; step < 5; ++step) {
    Batch b = draw(s, step, 0);
    for (int64_t r = 0; r < c.batch; ++r) {
      int64_t i = s.offset(step, 0, r);
      for (int64_t t = 0; t < c.seqLen; ++t) {
        EXPECT_EQ(b.tokens[r * c.seqLen + t], data[i + t]);
        EXPECT_EQ(b.labels[r * c.seqLen + t], data[i + t + 1]);
        if (t + 1 < c.seqLen) {
          EXPECT_EQ(b.labels[r * c.seqLen + t], b.tokens[r * c.seqLen + t + 1]);
        }
      }
    }
  }
}

TEST_F(SamplerTest, OffsetsCoverTheWholeRangeAndNoMore) {
  // 8 tokens, T = 5: offsets 0, 1, 2 (nanoGPT's randint(len - T)).
  TokenSpan data = makeData(8);
  SamplerConfig c;
  c.batch = 8, c.seqLen = 5, c.seed = 1;
  BatchSampler s = makeSampler(data, c);
  std::set<int64_t> seen;
  for (int64_t step = 0; step < 50; ++step)
    for (int64_t r = 0; r < c.batch; ++r)
      seen.insert(s.offset(step, 0, r));
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2}));
}

TEST_F(SamplerTest, BatchesAreAFunctionOfSeedRankStepAndMicrobatch) {
  TokenSpan data = makeData(4096);
  SamplerConfig c;
  c.batch = 4, c.seqLen = 32, c.seed = 1234;
  BatchSampler a = makeSampler(data, c), b = makeSampler(data, c);
  EXPECT_TRUE(draw(a, 3, 1) == draw(b, 3, 1));
  EXPECT_FALSE(draw(a, 3, 1) == draw(a, 3, 0));
  EXPECT_FALSE(draw(a, 3, 1) == draw(a, 4, 1));
  SamplerConfig otherSeed = c, otherRank = c;
  otherSeed.seed = 1235;
  otherRank.rank = 1;
  EXPECT_FALSE(draw(a, 3, 1) == draw(makeSampler(data, otherSeed), 3, 1));
  EXPECT_FALSE(draw(a, 3, 1) == draw(makeSampler(data, otherRank), 3, 1));
}

TEST_F(SamplerTest, NextWalksMicrobatchesThenSteps) {
  TokenSpan data = makeData(1000);
  SamplerConfig c;
  c.batch = 2, c.seqLen = 8, c.microbatches = 3, c.seed = 9;
  BatchSampler s = makeSampler(data, c);
  for (int64_t step = 0; step < 3; ++step)
    for (int64_t m = 0; m < 3; ++m) {
      EXPECT_EQ(s.state(), (SamplerState{9, step, m}));
      EXPECT_TRUE(next(s) == draw(s, step, m));
    }
  EXPECT_EQ(s.state(), (SamplerState{9, 3, 0}));
}

TEST_F(SamplerTest, ResumeFromSavedStateIsExact) {
  TokenSpan data = makeData(2000);
  SamplerConfig c;
  c.batch = 3, c.seqLen = 10, c.microbatches = 4, c.seed = ~0ull;
  BatchSampler original = makeSampler(data, c);
  for (int i = 0; i < 7; ++i)
    next(original);
  // The state goes through checkpoint-header JSON text.
  std::string saved;
  llvm::raw_string_ostream(saved) << original.state().toJSON();
  std::vector<Batch> expected;
  for (int i = 0; i < 6; ++i)
    expected.push_back(next(original));

  auto json = llvm::json::parse(saved);
  ASSERT_TRUE(bool(json)) << message(json);
  auto state = SamplerState::fromJSON(*json);
  ASSERT_TRUE(bool(state)) << message(state);
  EXPECT_EQ(*state, (SamplerState{~0ull, 1, 3}));
  BatchSampler resumed = makeSampler(data, c);
  ASSERT_FALSE(resumed.restore(*state));
  for (const Batch &b : expected)
    EXPECT_TRUE(next(resumed) == b);
}

TEST_F(SamplerTest, RestoreRejectsForeignStates) {
  SamplerConfig c;
  c.seqLen = 4, c.microbatches = 2, c.seed = 5;
  BatchSampler s = makeSampler(makeData(100), c);
  EXPECT_EQ(message(s.restore({6, 0, 0})),
            "data sampler state was saved with seed 6 but this sampler uses "
            "seed 5");
  EXPECT_EQ(message(s.restore({5, 3, 2})),
            "data sampler state (step 3, microbatch 2) is outside this "
            "sampler's 2 microbatches per step");
  EXPECT_EQ(s.state(), (SamplerState{5, 0, 0}));
}

TEST(SamplerState, FromJSONRejectsBadStates) {
  using llvm::json::Object;
  std::pair<llvm::json::Value, const char *> cases[] = {
      {llvm::json::Array{}, "expected an object"},
      {Object{{"seed", 5}, {"step", 0}, {"microbatch", 0}},
       "\"seed\" must be a decimal string"},
      {Object{{"seed", "5x"}, {"step", 0}, {"microbatch", 0}},
       "\"seed\" must be a decimal string"},
      {Object{{"seed", "5"}, {"step", -1}, {"microbatch", 0}},
       "non-negative integers"},
      {Object{{"seed", "5"}, {"step", 1}}, "non-negative integers"},
  };
  for (auto &[value, expected] : cases) {
    auto s = SamplerState::fromJSON(value);
    EXPECT_NE(message(s).find(expected), std::string::npos)
        << expected << " in: " << message(s);
  }
}

TEST_F(SamplerTest, TooLittleDataNamesTheFile) {
  TokenSpan data = makeData(16);
  SamplerConfig c;
  c.seqLen = 16;
  auto s = BatchSampler::create(data, c);
  EXPECT_EQ(message(s), tmp_.path("data16.bin") +
                            " has 16 tokens; a sequence length of 16 needs at "
                            "least 17 (use more text or a shorter sequence)");
  c.seqLen = 15;
  EXPECT_TRUE(bool(BatchSampler::create(data, c)));
  c.batch = 0;
  EXPECT_NE(message(BatchSampler::create(data, c)).find("positive batch"),
            std::string::npos);
}

} // namespace
