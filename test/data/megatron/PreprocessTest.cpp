//===- PreprocessTest.cpp - Corpus -> .bin/.idx, as preprocess_data.py ----===//
//
// JSONL documents (strings, sentence lists, escapes, empty texts) and text
// paragraphs come out as the Python reader sees them; the output does not
// depend on the worker count; bad lines fail naming file:line and leave no
// files behind.
//
//===----------------------------------------------------------------------===//
#include "runtime/data/megatron/Preprocess.h"
#include "test/data/megatron/MegatronTestUtil.h"

#include "llvm/Support/Path.h"

namespace strata::megatron {
namespace {

using namespace test;

std::vector<int64_t> bytes(llvm::StringRef s) {
  return std::vector<int64_t>(s.bytes_begin(), s.bytes_end());
}

llvm::Expected<PreprocessProgress> run(const PreprocessOptions &o) {
  return preprocess(o, Tokenizer::byteLevel(),
                    [](const PreprocessProgress &) {});
}

TEST(Preprocess, JsonlDocumentsAsMegatronWritesThem) {
  TempDir dir;
  std::string in = dir.write(
      "in.jsonl", "{\"text\": \"caf\\u00e9\\n\", \"id\": 1}\n"
                  "\n" // blank lines are skipped
                  "{\"id\": 2, \"text\": [\"one. \", \"\", \"two.\"]}\n"
                  "{\"text\": \"\"}\n"
                  "{\"text\": \"tab\\there\"}");
  PreprocessOptions o;
  o.input = in;
  o.outputPrefix = dir.path("out");
  o.eod = 255; // byte 255 standing in for a tokenizer's EOD id
  auto p = run(o);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->documents, 4);
  EXPECT_EQ(p->sequences, 4);
  std::string prefix = outputDatasetPrefix(o);
  EXPECT_EQ(prefix, dir.path("out_text_document"));
  llvm::json::Value ref = runReference({"read", prefix});
  const llvm::json::Object &r = *ref.getAsObject();
  EXPECT_EQ(*r.getInteger("dtype_code"), 8); // uint16 for a 256-id vocabulary
  // The EOD ends the last sequence of each non-empty document; the empty
  // document adds a document-index entry and no sequence.
  EXPECT_EQ(ints(r.get("document_index")),
            (std::vector<int64_t>{0, 1, 3, 3, 4}));
  std::vector<std::vector<int64_t>> want = {bytes("caf\xc3\xa9\n\xff"),
                                            bytes("one. "), bytes("two.\xff"),
                                            bytes("tab\there\xff")};
  std::vector<std::vector<int64_t>> got;
  for (const llvm::json::Value &s : *r.getArray("sequences"))
    got.push_back(ints(&s));
  EXPECT_EQ(got, want);
}

TEST(Preprocess, OutputDoesNotDependOnWorkers) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += "{\"text\": \"document " + std::to_string(i) +
            std::string(i % 37, 'x') + "\"}\n";
  std::string in = dir.write("in.jsonl", text);
  std::string out[2];
  int workers[2] = {1, 3};
  for (int k = 0; k < 2; ++k) {
    PreprocessOptions o;
    o.input = in;
    o.outputPrefix = dir.path("w" + std::to_string(workers[k]));
    o.workers = workers[k];
    auto p = run(o);
    ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
    EXPECT_EQ(p->documents, 5000);
    out[k] = slurp(outputDatasetPrefix(o) + ".bin") +
             slurp(outputDatasetPrefix(o) + ".idx");
  }
  EXPECT_FALSE(out[0].empty());
  EXPECT_EQ(out[0], out[1]);
}

TEST(Preprocess, TextParagraphsAreDocuments) {
  TempDir dir;
  std::string in =
      dir.write("in.txt", "\n\nFirst para,\nline two.\n\n\n \nSecond.\n"
                          "Third line\n\t\nlast, no newline");
  PreprocessOptions o;
  o.input = in;
  o.outputPrefix = dir.path("t");
  auto p = run(o);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  llvm::json::Value ref = runReference({"read", outputDatasetPrefix(o)});
  std::vector<std::vector<int64_t>> got, want;
  for (const llvm::json::Value &s : *ref.getAsObject()->getArray("sequences"))
    got.push_back(ints(&s));
  llvm::json::Value paras = runReference({"paragraphs", in});
  for (const llvm::json::Value &s : *paras.getAsArray())
    want.push_back(ints(&s));
  EXPECT_EQ(want.size(), 3u);
  EXPECT_EQ(got, want);
}

TEST(Preprocess, BadLinesNameFileAndLineAndWriteNothing) {
  TempDir dir;
  struct {
    const char *content, *expect;
  } cases[] = {
      {"{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": \"c\"\n",
       "in.jsonl:3: malformed JSON"},
      {"{\"text\": \"a\"}\n{\"body\": \"b\"}\n",
       "in.jsonl:2: no \"text\" key (choose it with --json-key)"},
      {"[1, 2]\n", "in.jsonl:1: the line is JSON but not an object"},
      {"{\"text\": 3}\n",
       "in.jsonl:1: \"text\" is not a string or list of strings"},
  };
  for (const auto &c : cases) {
    std::string in = dir.write("in.jsonl", c.content);
    PreprocessOptions o;
    o.input = in;
    o.outputPrefix = dir.path("bad");
    o.workers = 2;
    auto p = run(o);
    ASSERT_FALSE(bool(p));
    std::string e = llvm::toString(p.takeError());
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir.path(""), ec), end;
         it != end && !ec; it.increment(ec))
      EXPECT_EQ(llvm::sys::path::filename(it->path()), "in.jsonl")
          << "left behind";
  }
  PreprocessOptions o;
  o.input = dir.write("in.csv", "a,b\n");
  o.outputPrefix = dir.path("x");
  auto p = run(o);
  ASSERT_FALSE(bool(p));
  EXPECT_NE(
      llvm::toString(p.takeError()).find("in.csv: unknown input kind '.csv'"),
      std::string::npos);
}

TEST(Preprocess, RecordedTokenizerTravelsWithTheData) {
  TempDir dir;
  std::string in = dir.write("in.txt", "abc\n\ncab\n");
  auto tok = Tokenizer::charLevel("abc\n");
  ASSERT_TRUE(bool(tok));
  PreprocessOptions o;
  o.input = in;
  o.outputPrefix = dir.path("c");
  auto p = preprocess(o, *tok, [](const PreprocessProgress &) {});
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  auto rec = recordedTokenizer({outputDatasetPrefix(o), dir.path("none")});
  ASSERT_TRUE(bool(rec)) << llvm::toString(rec.takeError());
  ASSERT_TRUE(rec->has_value());
  EXPECT_TRUE(**rec == *tok);
  EXPECT_FALSE(endOfDocumentId(*tok).has_value());
}

} // namespace
} // namespace strata::megatron
