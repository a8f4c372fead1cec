//===- GPTDatasetTest.cpp - Megatron's sample indices against numpy -------===//
//
// The document, sample and shuffle indices and every sample's tokens equal
// the Python re-implementation of Megatron's GPTDataset in
// megatron_reference.py, which shuffles with numpy.random.RandomState itself
// (so strata's MT19937 + shuffle must match numpy bit for bit); blends equal
// its BlendedDataset; blend proportions follow the weights; bad --split and
// --data-path strings fail clearly.
//
//===----------------------------------------------------------------------===//
#include "runtime/data/megatron/BlendedDataset.h"
#include "test/data/megatron/MegatronTestUtil.h"

namespace strata::megatron {
namespace {

using namespace test;

/// The samples of `n` tokens each, as int64 rows.
std::vector<std::vector<int64_t>> samplesOf(const llvm::json::Value &ref) {
  std::vector<std::vector<int64_t>> r;
  for (const llvm::json::Value &s : *ref.getAsObject()->getArray("samples"))
    r.push_back(ints(&s));
  return r;
}

struct Case {
  const char *split;
  Split which;
  int64_t seqLen, numSamples;
  uint32_t seed;
};

TEST(GPTDataset, IndicesAndSamplesEqualMegatrons) {
  TempDir dir;
  std::string prefix = dir.path("corpus");
  writeCorpus(prefix, DType::UInt16, randomCorpus(3, 300, 60, 50000));
  auto data = IndexedDataset::open(prefix);
  ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
  int64_t trainTokens = 0;
  {
    auto m = parseSplit("969,30,1");
    ASSERT_TRUE(bool(m));
    auto [b, e] = splitRange(*(*m)[0], (*data)->numSequences());
    trainTokens = (*data)->countTokens(b, e);
  }
  int64_t perEpoch = (trainTokens - 1) / 16;
  const Case cases[] = {
      {"969,30,1", Split::Train, 16, 100, 1234},          // one epoch
      {"969,30,1", Split::Train, 16, perEpoch + 5, 1234}, // last epoch separate
      {"969,30,1", Split::Train, 16, 2 * perEpoch - 3,
       99},                                  // last epoch shuffled in
      {"969,30,1", Split::Valid, 8, 400, 7}, // many epochs of a small split
      {"80, 20", Split::Valid, 32, 50, 0},
      {"1,1,1", Split::Test, 5, 1000, 4294967295u},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::string(c.split) + " " + splitName(c.which).str() +
                 " n=" + std::to_string(c.numSamples));
    auto m = parseSplit(c.split);
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    auto [b, e] = splitRange(*(*m)[int(c.which)], (*data)->numSequences());
    auto ds =
        GPTDataset::build(*data, c.which, b, e, c.numSamples, c.seqLen, c.seed);
    ASSERT_TRUE(bool(ds)) << llvm::toString(ds.takeError());
    llvm::json::Value ref =
        runReference({"gpt", prefix, c.split, std::to_string(int(c.which)),
                      std::to_string(c.seqLen), std::to_string(c.numSamples),
                      std::to_string(c.seed)});
    const llvm::json::Object &o = *ref.getAsObject();
    EXPECT_EQ(ds->numEpochs(), *o.getInteger("num_epochs"));
    std::vector<int64_t> doc(ds->documentIndex().begin(),
                             ds->documentIndex().end());
    EXPECT_EQ(doc, ints(o.get("document_index")));
    EXPECT_EQ(ds->sampleIndex().vec(), ints(o.get("sample_index")));
    EXPECT_EQ(ds->shuffleIndex().vec(), ints(o.get("shuffle_index")));
    std::vector<std::vector<int64_t>> got;
    std::vector<int32_t> t(c.seqLen + 1);
    for (int64_t i = 0; i < ds->size(); ++i) {
      ds->sample(i, t.data());
      got.emplace_back(t.begin(), t.end());
    }
    EXPECT_EQ(got, samplesOf(ref));
  }
}

TEST(BlendedDataset, SamplesEqualMegatrons) {
  TempDir dir;
  std::string a = dir.path("a"), b = dir.path("b"), c = dir.path("c");
  writeCorpus(a, DType::UInt16, randomCorpus(11, 200, 50, 1000));
  writeCorpus(b, DType::UInt16, randomCorpus(12, 80, 30, 1000));
  writeCorpus(c, DType::Int32, randomCorpus(13, 120, 90, 100000));
  struct {
    std::string blend;
    Split which;
    int64_t n;
  } cases[] = {{"0.7 " + a + " 0.3 " + b, Split::Train, 2000},
               {"1 " + a + " 2 " + b + " 3.5 " + c, Split::Valid, 500},
               {a, Split::Train, 300}};
  for (const auto &k : cases) {
    SCOPED_TRACE(k.blend);
    auto blend = parseBlend(k.blend);
    ASSERT_TRUE(bool(blend)) << llvm::toString(blend.takeError());
    auto m = parseSplit("969,30,1");
    ASSERT_TRUE(bool(m));
    auto split = BlendedSplit::build(*blend, *m, k.which, k.n, 16, 1234);
    ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
    std::vector<std::vector<int64_t>> got;
    std::vector<int64_t> datasets;
    std::vector<int32_t> t(17);
    for (int64_t i = 0; i < split->size(); ++i) {
      ASSERT_FALSE(bool(split->sample(i, t.data())));
      got.emplace_back(t.begin(), t.end());
      datasets.push_back(split->datasetOf(i));
    }
    if (!blend->weights) { // a single prefix is its GPTDataset
      llvm::json::Value ref =
          runReference({"gpt", a, "969,30,1", "0", "16", "300", "1234"});
      EXPECT_EQ(got, samplesOf(ref));
      continue;
    }
    llvm::json::Value ref = runReference({"blend", k.blend, "969,30,1",
                                          std::to_string(int(k.which)), "16",
                                          std::to_string(k.n), "1234"});
    EXPECT_EQ(split->size(), *ref.getAsObject()->getInteger("size"));
    EXPECT_EQ(datasets, ints(ref.getAsObject()->get("dataset_index")));
    EXPECT_EQ(got, samplesOf(ref));
  }
}

TEST(BlendedDataset, ProportionsFollowTheWeights) {
  std::vector<int16_t> index;
  std::vector<int64_t> sampleIndex;
  const std::vector<double> w = normalizeWeights({0.7, 0.2, 0.1});
  buildBlendingIndices(w, 10000, index, sampleIndex);
  std::vector<int64_t> count(3, 0);
  for (int16_t d : index)
    ++count[d];
  // Megatron's greedy choice keeps every share within a sample of its
  // weight, well inside the 1% the issue asks for.
  for (int d = 0; d < 3; ++d)
    EXPECT_NEAR(double(count[d]) / 10000, w[d], 0.01) << "dataset " << d;
  // Each dataset's samples are drawn in order 0, 1, 2, ...
  std::vector<int64_t> next(3, 0);
  for (size_t i = 0; i < index.size(); ++i)
    EXPECT_EQ(sampleIndex[i], next[index[i]]++);
}

TEST(BlendedDataset, BadBlendsAndSplitsSayWhy) {
  auto err = [](llvm::Error e) { return llvm::toString(std::move(e)); };
  EXPECT_NE(
      err(parseBlend("0.7 A 0.3").takeError()).find("3 words, an odd count"),
      std::string::npos);
  EXPECT_NE(err(parseBlend("-0.5 A 1 B").takeError())
                .find("weight -0.5 of A is negative"),
            std::string::npos);
  EXPECT_NE(err(parseBlend("x A 1 B").takeError())
                .find("weight 'x' of dataset 1 is not a number"),
            std::string::npos);
  EXPECT_NE(err(parseBlend("0 A 0 B").takeError()).find("sum to zero"),
            std::string::npos);
  EXPECT_NE(err(parseBlend("  ").takeError()).find("no dataset prefix"),
            std::string::npos);
  EXPECT_NE(err(parseSplit("90,-10").takeError())
                .find("'-10' is not a non-negative number"),
            std::string::npos);
  EXPECT_NE(err(parseSplit("1,2,3,4").takeError()).find("more than three"),
            std::string::npos);
  EXPECT_NE(err(parseSplit("0,0").takeError()).find("sum to zero"),
            std::string::npos);
  auto m = parseSplit("100,0,0");
  ASSERT_TRUE(bool(m));
  EXPECT_FALSE((*m)[1].has_value()); // no valid split, as Megatron's None
  auto blend = parseBlend("/nonexistent/prefix");
  ASSERT_TRUE(bool(blend));
  EXPECT_NE(
      err(BlendedSplit::build(*blend, *m, Split::Valid, 10, 8, 1).takeError())
          .find("gives the valid split no share"),
      std::string::npos);
  EXPECT_NE(
      err(BlendedSplit::build(*blend, *m, Split::Train, 10, 8, 1).takeError())
          .find("/nonexistent/prefix.idx: cannot open the index file"),
      std::string::npos);
}

} // namespace
} // namespace strata::megatron
