//===- BadTokenizerTest.cpp - Tokenizer files strata refuses, and why -----===//
//
// Each bad tokenizer file gets an error naming the file and the field (or
// offset) at fault; bad text and ids get errors naming the position.
//
//===----------------------------------------------------------------------===//
#include "runtime/data/Tokenizer.h"
#include "runtime/text/TextTokenizer.h"

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

/// A minimal byte-level tokenizer.json; `model`, `preTokenizer` and `extra`
/// (more top-level fields) replace its parts.
std::string tokenizerJson(
    llvm::StringRef model =
        R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})",
    llvm::StringRef preTokenizer =
        R"({"type": "ByteLevel", "add_prefix_space": false})",
    llvm::StringRef extra = "") {
  return llvm::formatv(R"({{"added_tokens": [], "normalizer": null,
      "pre_tokenizer": {0}, "post_processor": null, "decoder": null,
      "model": {1}{2}})",
                       preTokenizer, model, extra)
      .str();
}

std::string loadError(llvm::StringRef content) {
  auto t = text::loadTokenizer(content, "tok.json");
  if (t)
    return "(loaded)";
  return llvm::toString(t.takeError());
}

TEST(BadTokenizer, MinimalFileLoadsAndMerges) {
  auto t = text::loadTokenizer(tokenizerJson(), "tok.json");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  std::vector<int32_t> ids;
  ASSERT_FALSE(bool((*t)->encode("abba", ids)));
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 1, 0}));
}

TEST(BadTokenizer, ErrorsNameTheField) {
  std::pair<std::string, const char *> cases[] = {
      {"{\"model\": ", "tok.json: error: malformed JSON: "},
      {"[1, 2]", "tok.json: error: tokenizer.json: expected a JSON object"},
      {tokenizerJson(R"({"type": "Unigram", "vocab": []})"),
       "tok.json: error: model.type: unsupported \"Unigram\" (strata supports "
       "BPE"},
      {tokenizerJson(R"({"type": "WordPiece", "vocab": {}})"),
       "model.type: unsupported \"WordPiece\""},
      {tokenizerJson(R"({"vocab": {}, "merges": []})"),
       "model.type: missing string"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]})"),
       "model.merges[0]: token \"b\" is not in model.vocab"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]})"),
       "model.merges[0]: expected \"left right\", got \"ab\""},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"})"),
       "model.unk_token \"<unk>\" is not in model.vocab"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {"a": -1}, "merges": []})"),
       "model.vocab: token \"a\" needs a non-negative integer id"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": [], "dropout": 0.1})"),
       "model.dropout: BPE dropout is not supported"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": [], "continuing_subword_prefix": "##"})"),
       "model.continuing_subword_prefix: subword prefixes"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}})"),
       "model.merges: expected an array"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}, "merges": []})",
                     R"({"type": "Whitespace"})"),
       "pre_tokenizer.type: unsupported \"Whitespace\" (strata supports "
       "ByteLevel, Split, Metaspace and Sequence"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": []})",
           R"({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Digits"}]})"),
       "pre_tokenizer.pretokenizers[1].type: unsupported \"Digits\""},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": []})",
           R"({"type": "Split", "pattern": {"Regex": "(?<=a)b"}, "behavior": "Isolated"})"),
       "pre_tokenizer.pattern: RE2 cannot compile the pattern"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": []})",
           R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "MergedWithNext"})"),
       "pre_tokenizer.behavior: unsupported behavior"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": []})",
           R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Isolated", "invert": true})"),
       "pre_tokenizer.invert: inverted splits are not supported"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}, "merges": []})", "null",
                     R"(, "normalizer": {"type": "NFKC"})"),
       "normalizer.type: unsupported \"NFKC\" (strata supports Prepend, "
       "Replace and Sequence"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}, "merges": []})", "null",
                     R"(, "decoder": {"type": "WordPiece"})"),
       "decoder.type: unsupported \"WordPiece\""},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}, "merges": []})", "null",
                     R"(, "post_processor": {"type": "Foo"})"),
       "post_processor.type: unsupported \"Foo\""},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}, "merges": []})", "null",
                     R"(, "truncation": {"max_length": 5})"),
       "truncation: must be null"},
      {tokenizerJson(
           R"({"type": "BPE", "vocab": {}, "merges": []})", "null",
           R"(, "added_tokens": [{"id": 0, "content": "x", "single_word": true}])"),
       "added_tokens[0].single_word: single_word added tokens are not "
       "supported"},
      {tokenizerJson(R"({"type": "BPE", "vocab": {}, "merges": []})", "null",
                     R"(, "added_tokens": [{"content": "x"}])"),
       "added_tokens[0]: expected an object with an integer \"id\""},
  };
  for (auto &[content, expected] : cases)
    EXPECT_NE(loadError(content).find(expected), std::string::npos)
        << "expected '" << expected << "' in: " << loadError(content);
}

// Escaped characters past plane 1 (Python's json.dump writes them so) read
// as themselves, despite LLVM 14's JSON parser.
TEST(BadTokenizer, EscapedAstralCharacters) {
  auto t = text::loadTokenizer(
      tokenizerJson(
          R"({"type": "BPE", "vocab": {"\ud840\udc00": 0, "\ud83d\ude00": 1, "\\": 2}, "merges": []})",
          "null"),
      "tok.json");
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  std::vector<int32_t> ids;
  ASSERT_FALSE(bool((*t)->encode("\xF0\xA0\x80\x80\xF0\x9F\x98\x80\\", ids)));
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2}));
}

TEST(BadTokenizer, NotATokenizerFile) {
  EXPECT_NE(
      loadError("\x01\x02garbage")
          .find("tok.json: error: neither a tokenizer.json (a JSON object) "
                "nor a SentencePiece model"),
      std::string::npos)
      << loadError("\x01\x02garbage");
  auto missing = text::loadTokenizerFile("/nonexistent/tokenizer.json");
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "/nonexistent/tokenizer.json: error: cannot read tokenizer file "
            "(No such file or directory; pass a tokenizer.json or a "
            "SentencePiece .model)");
}

TEST(BadTokenizer, BadTextAndIds) {
  auto t = text::loadTokenizer(tokenizerJson(), "tok.json");
  ASSERT_TRUE(bool(t));
  std::vector<int32_t> ids;
  llvm::Error e = (*t)->encode("ab\xC3(", ids);
  EXPECT_EQ(llvm::toString(std::move(e)),
            "invalid UTF-8 at byte offset 2 (byte 0xC3); tokenizer.json and "
            "SentencePiece tokenizers read UTF-8 text");
  auto d = (*t)->decode({0, 7});
  ASSERT_FALSE(bool(d));
  EXPECT_EQ(
      llvm::toString(d.takeError()),
      "token id 7 at position 1 is not in the tokenizer's vocabulary of 3");
}

} // namespace
