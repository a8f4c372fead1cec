//===- TokenizerTest.cpp - Char and byte tokenizers -----------------------===//
#include "runtime/data/Tokenizer.h"
#include "runtime/data/TokenDataset.h"

#include "test/io/TestFiles.h"

#include <gtest/gtest.h>

using namespace strata;
using strata::test::message;

namespace {

std::vector<int32_t> encodeOk(const Tokenizer &t, llvm::StringRef text) {
  std::vector<int32_t> ids;
  llvm::Error err = t.encode(text, ids);
  EXPECT_FALSE(err) << llvm::toString(std::move(err));
  return ids;
}

Tokenizer charOk(llvm::StringRef text) {
  auto t = Tokenizer::charLevel(text);
  EXPECT_TRUE(bool(t)) << message(t);
  return t ? std::move(*t) : Tokenizer::byteLevel();
}

TEST(ByteTokenizer, IdsAreBytesAndAnyBytesRoundTrip) {
  Tokenizer t = Tokenizer::byteLevel();
  EXPECT_EQ(t.vocabSize(), 256);
  EXPECT_EQ(t.name(), "byte");
  std::string text("a\0\xff\xc0 \n", 6); // includes NUL and invalid UTF-8
  std::vector<int32_t> ids = encodeOk(t, text);
  EXPECT_EQ(ids, (std::vector<int32_t>{'a', 0, 255, 0xC0, ' ', '\n'}));
  auto back = t.decode(ids);
  ASSERT_TRUE(bool(back)) << message(back);
  EXPECT_EQ(*back, text);
}

TEST(ByteTokenizer, DecodeRejectsIdsOutsideVocab) {
  auto r = Tokenizer::byteLevel().decode({65, 256});
  EXPECT_EQ(message(r), "token id 256 at position 1 is outside the byte "
                        "tokenizer's vocabulary of 256");
}

TEST(CharTokenizer, VocabIsSortedCodePoints) {
  // 'é' U+00E9 (2 bytes), '€' U+20AC (3 bytes), '😀' U+1F600 (4 bytes).
  std::string text = "b\xC3\xA9"
                     "a\xE2\x82\xAC"
                     "\xF0\x9F\x98\x80"
                     "ab\n";
  Tokenizer t = charOk(text);
  EXPECT_EQ(t.name(), "char");
  EXPECT_EQ(t.codePoints(),
            (llvm::ArrayRef<uint32_t>{'\n', 'a', 'b', 0xE9, 0x20AC, 0x1F600}));
  std::vector<int32_t> ids = encodeOk(t, text);
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 3, 1, 4, 5, 1, 2, 0}));
  auto back = t.decode(ids);
  ASSERT_TRUE(bool(back)) << message(back);
  EXPECT_EQ(*back, text);
}

TEST(CharTokenizer, RejectsInvalidUTF8) {
  const char *bad[] = {
      "ab\xC0\xAF",         // overlong '/'
      "ab\xED\xA0\x80",     // UTF-16 surrogate
      "ab\xE2\x82",         // truncated sequence
      "ab\x80",             // stray continuation byte
      "ab\xF4\x90\x80\x80", // past U+10FFFF
  };
  for (const char *text : bad) {
    auto t = Tokenizer::charLevel(text);
    EXPECT_NE(message(t).find("invalid UTF-8 at byte offset 2"),
              std::string::npos)
        << text;
  }
  std::vector<int32_t> ids;
  EXPECT_NE(message(charOk("ab").encode("a\xFF", ids)).find("byte 0xFF"),
            std::string::npos);
  EXPECT_EQ(message(Tokenizer::charLevel("")),
            "cannot build a char vocabulary from empty text");
}

TEST(CharTokenizer, UnknownCharacterErrorNamesIt) {
  Tokenizer t = charOk("abc");
  std::vector<int32_t> ids;
  EXPECT_EQ(message(t.encode("abz", ids)),
            "character 'z' (U+007A) at byte offset 2 is not in the char "
            "tokenizer's vocabulary of 3 characters");
  EXPECT_NE(
      message(t.encode("a\xE2\x82\xAC", ids)).find("'\xE2\x82\xAC' (U+20AC)"),
      std::string::npos);
  // Control characters are named by code point only.
  EXPECT_NE(
      message(t.encode("a\n", ids)).find("character U+000A at byte offset 1"),
      std::string::npos);
}

TEST(CharTokenizer, DecodeRejectsIdsOutsideVocab) {
  auto r = charOk("abc").decode({0, 3});
  EXPECT_EQ(message(r), "token id 3 at position 1 is outside the char "
                        "tokenizer's vocabulary of 3");
  EXPECT_FALSE(message(charOk("abc").decode({-1})).empty());
}

TEST(Tokenizer, JSONRoundTrip) {
  for (const Tokenizer &t :
       {charOk("hello, w\xC3\xB6rld\n\t\""), Tokenizer::byteLevel()}) {
    // Through text, as a checkpoint header carries it.
    std::string text;
    llvm::raw_string_ostream(text) << t.toJSON();
    auto parsed = llvm::json::parse(text);
    ASSERT_TRUE(bool(parsed)) << message(parsed);
    auto back = Tokenizer::fromJSON(*parsed);
    ASSERT_TRUE(bool(back)) << message(back);
    EXPECT_TRUE(*back == t) << text;
    EXPECT_EQ(back->fingerprint(), t.fingerprint());
  }
  EXPECT_NE(charOk("ab").fingerprint(), charOk("abc").fingerprint());
  EXPECT_NE(charOk("ab").fingerprint(), Tokenizer::byteLevel().fingerprint());
}

TEST(Tokenizer, FromJSONRejectsBadDescriptions) {
  using llvm::json::Object;
  std::pair<llvm::json::Value, const char *> cases[] = {
      {llvm::json::Value(3), "expected an object"},
      {Object{{"vocab", "ab"}}, "missing string \"kind\""},
      {Object{{"kind", "bpe"}}, "unknown kind \"bpe\""},
      {Object{{"kind", "file"}}, "needs a string \"file\""},
      {Object{{"kind", "file"}, {"file", "t.model"}}, "\"content\" or"},
      {Object{{"kind", "file"}, {"file", "t.model"}, {"content_base64", "a"}},
       "is not base64"},
      {Object{{"kind", "char"}}, "non-empty string \"vocab\""},
      {Object{{"kind", "char"}, {"vocab", "ba"}}, "increasing code point"},
      {Object{{"kind", "char"}, {"vocab", "aa"}}, "increasing code point"},
  };
  for (auto &[value, expected] : cases) {
    auto t = Tokenizer::fromJSON(value);
    EXPECT_NE(message(t).find(expected), std::string::npos)
        << expected << " in: " << message(t);
  }
}

TEST(Tokenizer, MakeTokenizerByName) {
  strata::test::TempDir tmp;
  std::string path = tmp.path("t.txt");
  strata::test::writeBytes(path, "hello");
  auto c = makeTokenizer("char", path);
  ASSERT_TRUE(bool(c)) << message(c);
  EXPECT_EQ(c->vocabSize(), 4);
  auto b = makeTokenizer("byte", tmp.path("missing.txt"));
  ASSERT_TRUE(bool(b)) << message(b); // the byte vocab needs no text
  EXPECT_EQ(b->kind(), Tokenizer::Kind::Byte);

  auto missing = makeTokenizer("char", tmp.path("missing.txt"));
  EXPECT_EQ(message(missing), tmp.path("missing.txt") +
                                  ": error: cannot read the data file: No "
                                  "such file or directory");
  // Any other name is a tokenizer file's path.
  auto unknown = makeTokenizer("bpe", path);
  EXPECT_EQ(message(unknown),
            "bpe: error: cannot read tokenizer file (No such file or "
            "directory; --tokenizer takes char, byte, or a tokenizer.json or "
            "SentencePiece .model path)");
}

// nanoGPT's shakespeare_char: 65 characters, 1,115,394 of them.
TEST(CharTokenizer, TinyShakespeare) {
  std::string path = STRATA_TINYSHAKESPEARE;
  if (!llvm::sys::fs::exists(path))
    GTEST_SKIP() << "no " << path;
  std::string text = strata::test::readBytes(path);
  Tokenizer t = charOk(text);
  EXPECT_EQ(t.vocabSize(), 65);
  // Sorted as Python's sorted(set(text)): '\n', ' ', punctuation, '3', A-Z,
  // a-z.
  EXPECT_EQ(t.codePoints().take_front(13),
            (llvm::ArrayRef<uint32_t>{'\n', ' ', '!', '$', '&', '\'', ',', '-',
                                      '.', '3', ':', ';', '?'}));
  EXPECT_EQ(t.codePoints()[13], uint32_t('A'));
  EXPECT_EQ(t.codePoints().back(), uint32_t('z'));
  std::vector<int32_t> ids = encodeOk(t, text);
  EXPECT_EQ(ids.size(), 1115394u);
  // nanoGPT's encode("hii there").
  EXPECT_EQ(encodeOk(t, "hii there"),
            (std::vector<int32_t>{46, 47, 47, 1, 58, 46, 43, 56, 43}));
  auto back = t.decode(ids);
  ASSERT_TRUE(bool(back)) << message(back);
  EXPECT_TRUE(*back == text);
}

} // namespace
