//===- TokenDatasetTest.cpp - Token caches and splits ---------------------===//
#include "runtime/data/TokenDataset.h"

#include "test/io/TestFiles.h"

#include "llvm/Support/Chrono.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace strata;
using strata::test::message;
using strata::test::readBytes;
using strata::test::TempDir;
using strata::test::writeBytes;

namespace {

using Status = TokenDataset::CacheStatus;

TokenDataset openOk(llvm::StringRef path, const Tokenizer &t,
                    llvm::StringRef cacheDir = "") {
  auto ds = TokenDataset::open(path, t, cacheDir);
  if (!ds)
    llvm::report_fatal_error(ds.takeError());
  return std::move(*ds);
}

std::vector<int32_t> tokensOf(const TokenSpan &span) {
  std::vector<int32_t> out(span.size());
  span.copy(0, span.size(), out.data());
  return out;
}

std::vector<int32_t> encodeOk(const Tokenizer &t, llvm::StringRef text) {
  std::vector<int32_t> ids;
  llvm::Error err = t.encode(text, ids);
  EXPECT_FALSE(err) << llvm::toString(std::move(err));
  return ids;
}

/// Sets the modification time of `path` to `secs` after the epoch.
void setMTime(const std::string &path, int64_t secs) {
  int fd;
  ASSERT_FALSE(llvm::sys::fs::openFileForWrite(
      path, fd, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_Append));
  auto t = llvm::sys::toTimePoint(time_t(secs));
  EXPECT_FALSE(llvm::sys::fs::setLastAccessAndModificationTime(fd, t, t));
  ::close(fd);
}

TEST(TokenDataset, CacheIsCreatedOnceThenReused) {
  TempDir tmp;
  std::string text = tmp.path("input.txt");
  writeBytes(text, "to be or not to be");
  Tokenizer byte = Tokenizer::byteLevel();
  std::string cache = TokenDataset::cachePath(text, byte);
  EXPECT_EQ(cache, text + ".byte.tokens");

  TokenDataset first = openOk(text, byte);
  EXPECT_EQ(first.cacheStatus(), Status::Created);
  EXPECT_EQ(first.cachePath(), cache);
  EXPECT_EQ(first.tokenBytes(), 2u);
  EXPECT_EQ(tokensOf(first.all()), encodeOk(byte, "to be or not to be"));
  std::string bytes = readBytes(cache);
  EXPECT_EQ(bytes.size(), 64u + 2 * 18);
  EXPECT_EQ(bytes.substr(0, 8), "STRATATK");

  TokenDataset second = openOk(text, byte);
  EXPECT_EQ(second.cacheStatus(), Status::Reused);
  EXPECT_EQ(tokensOf(second.all()), tokensOf(first.all()));
  EXPECT_EQ(readBytes(cache), bytes);
  EXPECT_EQ(tmp.list(),
            (std::vector<std::string>{"input.txt", "input.txt.byte.tokens"}));
}

TEST(TokenDataset, StaleCacheIsRebuilt) {
  TempDir tmp;
  std::string text = tmp.path("input.txt");
  writeBytes(text, "abcabc");
  setMTime(text, 1000000);
  auto abc = Tokenizer::charLevel("abc");
  ASSERT_TRUE(bool(abc));
  EXPECT_EQ(openOk(text, *abc).cacheStatus(), Status::Created);

  // Same size, new contents and mtime.
  writeBytes(text, "cbacba");
  setMTime(text, 1000001);
  TokenDataset ds = openOk(text, *abc);
  EXPECT_EQ(ds.cacheStatus(), Status::Rebuilt);
  EXPECT_EQ(tokensOf(ds.all()), (std::vector<int32_t>{2, 1, 0, 2, 1, 0}));

  // Another size.
  writeBytes(text, "aa");
  EXPECT_EQ(openOk(text, *abc).cacheStatus(), Status::Rebuilt);
  EXPECT_EQ(tokensOf(openOk(text, *abc).all()), (std::vector<int32_t>{0, 0}));

  // Another vocabulary under the same cache name.
  auto ab = Tokenizer::charLevel("ab");
  ASSERT_TRUE(bool(ab));
  EXPECT_EQ(openOk(text, *ab).cacheStatus(), Status::Rebuilt);
  EXPECT_EQ(openOk(text, *abc).cacheStatus(), Status::Rebuilt);
}

TEST(TokenDataset, DamagedCacheIsRebuilt) {
  TempDir tmp;
  std::string text = tmp.path("input.txt");
  writeBytes(text, "hello world");
  Tokenizer byte = Tokenizer::byteLevel();
  std::string cache = openOk(text, byte).cachePath();
  std::string good = readBytes(cache);
  for (std::string bad : {good.substr(0, good.size() - 2), // truncated
                          good + "xx",                     // overlong
                          std::string("junk"), std::string()}) {
    writeBytes(cache, bad);
    TokenDataset ds = openOk(text, byte);
    EXPECT_EQ(ds.cacheStatus(), Status::Rebuilt) << bad.size();
    EXPECT_EQ(readBytes(cache), good);
  }
}

TEST(TokenDataset, WideVocabularyUsesFourByteTokens) {
  // 70,000 distinct code points from U+10000 up: a vocab over 65536.
  std::string text;
  for (uint32_t cp = 0x10000; cp < 0x10000 + 70000; ++cp)
    appendUTF8(cp, text);
  TempDir tmp;
  std::string path = tmp.path("wide.txt");
  writeBytes(path, text);
  auto t = Tokenizer::charLevel(text);
  ASSERT_TRUE(bool(t));
  EXPECT_EQ(t->vocabSize(), 70000);
  TokenDataset ds = openOk(path, *t);
  EXPECT_EQ(ds.tokenBytes(), 4u);
  ASSERT_EQ(ds.size(), 70000);
  EXPECT_EQ(ds.all()[69999], 69999);
  EXPECT_EQ(openOk(path, *t).cacheStatus(), Status::Reused);
}

TEST(TokenDataset, CacheDirectoryHoldsTheCache) {
  TempDir data, cacheDir;
  std::string text = data.path("input.txt");
  writeBytes(text, "abc");
  TokenDataset ds = openOk(text, Tokenizer::byteLevel(), cacheDir.dir());
  EXPECT_EQ(ds.cachePath(), cacheDir.path("input.txt.byte.tokens"));
  EXPECT_EQ(data.list(), (std::vector<std::string>{"input.txt"}));
  EXPECT_EQ(cacheDir.list(),
            (std::vector<std::string>{"input.txt.byte.tokens"}));
}

TEST(TokenDataset, SplitsAreNinetyTen) {
  TempDir tmp;
  std::string text = tmp.path("input.txt");
  std::string contents;
  for (int i = 0; i < 1005; ++i)
    contents += char('a' + i % 26);
  writeBytes(text, contents);
  TokenDataset ds = openOk(text, Tokenizer::byteLevel());
  EXPECT_EQ(ds.train().size(), 904); // int(1005 * 0.9)
  EXPECT_EQ(ds.val().size(), 101);
  EXPECT_EQ(ds.val()[0], ds.all()[904]);
  EXPECT_EQ(ds.train().describe(), text + " (train split)");
  EXPECT_EQ(ds.val().describe(), text + " (validation split)");
}

TEST(TokenDataset, SpansOutliveTheDataset) {
  TempDir tmp;
  std::string text = tmp.path("input.txt");
  writeBytes(text, "xyz");
  TokenSpan span = openOk(text, Tokenizer::byteLevel()).all();
  EXPECT_EQ(tokensOf(span), (std::vector<int32_t>{'x', 'y', 'z'}));
}

TEST(TokenDataset, ErrorsNameTheFile) {
  TempDir tmp;
  std::string missing = tmp.path("missing.txt");
  auto ds = TokenDataset::open(missing, Tokenizer::byteLevel());
  EXPECT_EQ(message(ds), missing + ": error: cannot read the data file: No "
                                   "such file or directory");

  auto dir = TokenDataset::open(tmp.dir(), Tokenizer::byteLevel());
  EXPECT_EQ(message(dir),
            tmp.dir() + ": error: the data file is not a regular file");

  std::string text = tmp.path("input.txt");
  writeBytes(text, "abc!");
  auto abc = Tokenizer::charLevel("abc");
  ASSERT_TRUE(bool(abc));
  auto unknown = TokenDataset::open(text, *abc);
  EXPECT_EQ(message(unknown),
            text + ": character '!' (U+0021) at byte offset 3 is not in the "
                   "char tokenizer's vocabulary of 3 characters");

  writeBytes(text, "abc");
  std::string noDir = tmp.path("no/such/dir");
  EXPECT_EQ(message(TokenDataset::open(text, *abc, noDir)),
            "cannot write token cache: " + noDir +
                "/input.txt.char.tokens: error: cannot write: the directory '" +
                noDir + "' does not exist (create it first: mkdir -p " + noDir +
                ") (pass a writable cache directory)");
}

// nanoGPT's prepare.py for shakespeare_char: "train has 1,003,854 tokens,
// val has 111,540 tokens".
TEST(TokenDataset, TinyShakespeare) {
  std::string path = STRATA_TINYSHAKESPEARE;
  if (!llvm::sys::fs::exists(path))
    GTEST_SKIP() << "no " << path;
  auto t = makeTokenizer("char", path);
  ASSERT_TRUE(bool(t)) << message(t);
  TempDir cacheDir; // the shared data directory is not ours to write
  TokenDataset ds = openOk(path, *t, cacheDir.dir());
  EXPECT_EQ(ds.cacheStatus(), Status::Created);
  EXPECT_EQ(ds.size(), 1115394);
  EXPECT_EQ(ds.train().size(), 1003854);
  EXPECT_EQ(ds.val().size(), 111540);
  // "First Citizen:" opens the play.
  std::vector<int32_t> head(14);
  ds.all().copy(0, 14, head.data());
  auto text = t->decode(head);
  ASSERT_TRUE(bool(text));
  EXPECT_EQ(*text, "First Citizen:");
  EXPECT_EQ(openOk(path, *t, cacheDir.dir()).cacheStatus(), Status::Reused);
}

} // namespace
