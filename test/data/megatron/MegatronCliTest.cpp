//===- MegatronCliTest.cpp - strata preprocess + train --data-path --------===//
//
// End to end through the binary: Tiny Shakespeare preprocessed into two
// datasets (read back by the Python reader), a blend of them trained with
// Megatron's sampling (loss finite and falling), a resumed run drawing the
// same samples (bitwise the same losses), and the verb's errors.
//
//===----------------------------------------------------------------------===//
#include "test/data/megatron/MegatronTestUtil.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace strata::megatron {
namespace {

using namespace test;

struct RunResult {
  int rc = -1;
  std::string out, err;
};

RunResult strata(const std::vector<std::string> &args) {
  llvm::SmallString<128> out, err;
  llvm::sys::fs::createTemporaryFile("strata-out", "txt", out);
  llvm::sys::fs::createTemporaryFile("strata-err", "txt", err);
  std::vector<llvm::StringRef> argv = {STRATA_BIN};
  for (const std::string &a : args)
    argv.push_back(a);
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef("/dev/null"),
                                                 out.str(), err.str()};
  RunResult r;
  std::string msg;
  r.rc = llvm::sys::ExecuteAndWait(STRATA_BIN, argv, llvm::None, redirects, 300,
                                   0, &msg);
  EXPECT_TRUE(msg.empty()) << msg;
  r.out = slurp(out);
  r.err = slurp(err);
  llvm::sys::fs::remove(out);
  llvm::sys::fs::remove(err);
  return r;
}

/// The "loss" of each line of OUT/metrics.jsonl, in step order.
std::vector<double> losses(const std::string &outDir) {
  std::vector<double> r;
  llvm::SmallVector<llvm::StringRef> lines;
  std::string text = slurp(outDir + "/metrics.jsonl");
  llvm::StringRef(text).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    auto v = llvm::json::parse(line);
    if (!v) {
      ADD_FAILURE() << llvm::toString(v.takeError());
      continue;
    }
    if (auto l = v->getAsObject()->getNumber("loss"))
      r.push_back(*l);
  }
  return r;
}

class MegatronCli : public ::testing::Test {
protected:
  /// Tiny Shakespeare's first 3/5 and last 2/5 of lines, preprocessed.
  void SetUp() override {
    std::string text = slurp(STRATA_TINYSHAKESPEARE);
    ASSERT_GT(text.size(), 1000000u);
    size_t cut = text.find("\n\n", text.size() * 3 / 5);
    a_ = dir_.write("a.txt", text.substr(0, cut + 1));
    b_ = dir_.write("b.txt", text.substr(cut + 1));
    for (const std::string &in : {a_, b_}) {
      std::string prefix = in.substr(0, in.size() - 4);
      RunResult r = strata({"preprocess", "--input", in, "--tokenizer", "byte",
                            "--output-prefix", prefix, "--workers", "2"});
      ASSERT_EQ(r.rc, 0) << r.err;
      EXPECT_NE(r.err.find("MB/s"), std::string::npos) << r.err;
      EXPECT_NE(r.out.find("wrote " + prefix + "_text_document.bin and .idx"),
                std::string::npos)
          << r.out;
    }
  }

  std::string train(const std::string &out, int steps,
                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"train",
                                     STRATA_SOURCE_DIR
                                     "/examples/gpt_tiny.textproto",
                                     "--data-path",
                                     "0.7 " + dir_.path("a_text_document") +
                                         " 0.3 " + dir_.path("b_text_document"),
                                     "--split",
                                     "90,10,0",
                                     "--steps",
                                     std::to_string(steps),
                                     "--eval-every",
                                     "20",
                                     "--eval-iters",
                                     "2",
                                     "--lr",
                                     "3e-3",
                                     "--warmup",
                                     "5",
                                     "--decay-iters",
                                     "40",
                                     "--sample",
                                     "0",
                                     "--no-fusion",
                                     "--out",
                                     dir_.path(out)};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = strata(args);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    return r.out;
  }

  TempDir dir_;
  std::string a_, b_;
};

TEST_F(MegatronCli, PreprocessedParagraphsAreThePythonReadersDocuments) {
  llvm::json::Value ref = runReference({"read", dir_.path("b_text_document")});
  llvm::json::Value paras = runReference({"paragraphs", b_});
  const llvm::json::Array &seqs = *ref.getAsObject()->getArray("sequences");
  const llvm::json::Array &want = *paras.getAsArray();
  ASSERT_EQ(seqs.size(), want.size());
  ASSERT_GT(want.size(), 1000u);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(ints(&seqs[i]), ints(&want[i])) << "document " << i;
}

TEST_F(MegatronCli, TrainsOnABlendAndResumesOnTheSameSamples) {
  std::string log = train("full", 40);
  EXPECT_NE(log.find("vocab 256"), std::string::npos)
      << log; // the recorded byte tokenizer
  std::vector<double> full = losses(dir_.path("full"));
  ASSERT_EQ(full.size(), 40u);
  for (double l : full)
    ASSERT_TRUE(std::isfinite(l));
  // From ln(256) = 5.5 bytes of uniform guessing, 40 steps of 768 tokens
  // learn at least the byte frequencies of English text (about 3.3 nats):
  // the last five steps average a full nat under the first.
  double last = 0;
  for (size_t i = 35; i < 40; ++i)
    last += full[i] / 5;
  EXPECT_LT(last, full[0] - 1.0)
      << "first " << full[0] << ", last five " << last;

  train("resumed", 20);
  train("resumed", 40, {"--resume"});
  std::vector<double> resumed = losses(dir_.path("resumed"));
  ASSERT_EQ(resumed.size(), 40u);
  for (size_t i = 0; i < 40; ++i)
    EXPECT_EQ(resumed[i], full[i]) << "step " << i; // same samples, same losses
}

TEST(MegatronCliTokenizerFile, TokensAreHfTokenizersAndEosEndsEachDocument) {
  // A byte-level BPE trained by strata on Tiny Shakespeare; the documents
  // are its speeches plus Unicode the training text never saw.
  TempDir dir;
  std::string text = slurp(STRATA_TINYSHAKESPEARE).substr(0, 200000);
  std::string corpus = dir.write("train.txt", text);
  std::string tok = dir.path("tok.json");
  RunResult r =
      strata({"tokenizer", "train", "--vocab-size", "400", "-o", tok, corpus});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string jsonl;
  llvm::SmallVector<llvm::StringRef> paras;
  llvm::StringRef(text).split(paras, "\n\n", 300, false);
  paras.pop_back(); // the rest of the text
  paras.push_back("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x8e\x89 "
                  "\xe6\xbc\xa2\xe5\xad\x97\ttabs\r\n");
  for (llvm::StringRef p : paras)
    jsonl += llvm::formatv("{0}\n",
                           llvm::json::Value(llvm::json::Object{{"text", p}}))
                 .str();
  std::string in = dir.write("docs.jsonl", jsonl);
  std::string prefix = dir.path("bpe");
  r = strata({"preprocess", "--input", in, "--tokenizer", tok, "--append-eod",
              "--output-prefix", prefix, "--workers", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  llvm::json::Value got = runReference({"read", prefix + "_text_document"});
  llvm::json::Value hf =
      runReference({"hf-encode", tok, in, "text"}, STRATA_HF_PYTHON);
  const llvm::json::Array &seqs = *got.getAsObject()->getArray("sequences");
  const llvm::json::Array &ids = *hf.getAsObject()->getArray("ids");
  int64_t eos = *hf.getAsObject()->getInteger("eos");
  ASSERT_EQ(seqs.size(), paras.size());
  ASSERT_EQ(ids.size(), paras.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<int64_t> want = ints(&ids[i]);
    want.push_back(eos); // --append-eod: the tokenizer's <|endoftext|>
    ASSERT_EQ(ints(&seqs[i]), want) << "document " << i;
  }
}

TEST_F(MegatronCli, ErrorsSayWhatAndWhere) {
  RunResult r = strata({"preprocess", "--input", a_, "--output-prefix",
                        dir_.path("e"), "--append-eod"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(
      r.err.find(
          "strata preprocess: error: --append-eod: the byte tokenizer has no "
          "end-of-document token"),
      std::string::npos)
      << r.err;
  std::string bad =
      dir_.write("bad.jsonl", "{\"text\": \"ok\"}\n{\"text\": oops}\n");
  r = strata({"preprocess", "--input", bad, "--output-prefix", dir_.path("e")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(
      r.err.find("strata preprocess: error: " + bad + ":2: malformed JSON"),
      std::string::npos)
      << r.err;
  EXPECT_FALSE(llvm::sys::fs::exists(dir_.path("e_text_document.bin")));
  r = strata({"train", STRATA_SOURCE_DIR "/examples/gpt_tiny.textproto",
              "--data-path", "0.5 " + dir_.path("a_text_document") + " -0.5 x",
              "--out", dir_.path("o1")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("weight -0.5 of x is negative"), std::string::npos)
      << r.err;
  r = strata({"train", STRATA_SOURCE_DIR "/examples/gpt_tiny.textproto",
              "--data-path", dir_.path("missing"), "--tokenizer", "byte",
              "--out", dir_.path("o2")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(
      r.err.find(dir_.path("missing") + ".idx: cannot open the index file"),
      std::string::npos)
      << r.err;
}

} // namespace
} // namespace strata::megatron
