//===- RegressionTest.cpp - Every fuzz finding, through the same entry ----===//
//
// Each file under test/fuzz/regressions/<target>/ is an input a fuzz target
// found to crash, abort, hang or misbehave in a reader. Fed through the
// same entry point (FuzzEntries.h) it must now end in a clean error: no
// crash (the ASan build of scripts/sanitize.sh runs this test too), and
// the message of `<input>.msg` (a substring: the error that names the bug's
// fix, so an input that starts failing earlier for another reason is
// noticed). A file named `ok-*` is an input the fix makes valid: it must be
// accepted. The committed seeds of
// test/fuzz/corpus/<target>/ must be accepted too: they are real files.
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzEntries.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace strata;

namespace {

struct Input {
  std::string target, path;
};

std::vector<Input> inputsUnder(llvm::StringRef root) {
  std::vector<Input> inputs;
  for (llvm::StringRef target : fuzz::targetNames()) {
    llvm::SmallString<256> dir(root);
    llvm::sys::path::append(dir, target);
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::path::extension(it->path()) != ".msg")
        inputs.push_back({target.str(), it->path()});
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const Input &a, const Input &b) { return a.path < b.path; });
  return inputs;
}

std::string testName(const testing::TestParamInfo<Input> &info) {
  std::string name = info.param.target + "_" +
                     llvm::sys::path::filename(info.param.path).str();
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

std::string readInput(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  EXPECT_TRUE(bool(buf)) << path;
  return buf ? (*buf)->getBuffer().str() : "";
}

class Regression : public testing::TestWithParam<Input> {};

TEST_P(Regression, EndsInACleanError) {
  const Input &in = GetParam();
  llvm::Error e = fuzz::entryFor(in.target)(readInput(in.path));
  if (llvm::sys::path::filename(in.path).startswith("ok-")) {
    EXPECT_FALSE(bool(e)) << toString(std::move(e));
    return;
  }
  ASSERT_TRUE(bool(e)) << in.path
                       << " is accepted; a fuzz finding should "
                          "be refused (or be named ok-*)";
  std::string msg = toString(std::move(e));
  std::string want = llvm::StringRef(readInput(in.path + ".msg")).trim().str();
  ASSERT_FALSE(want.empty()) << in.path << ".msg: the expected message";
  EXPECT_NE(msg.find(want), std::string::npos)
      << "message: " << msg << "\nexpected it to contain: " << want;
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Regression,
                         testing::ValuesIn(inputsUnder(STRATA_FUZZ_DIR
                                                       "/regressions")),
                         testName);

class Seed : public testing::TestWithParam<Input> {};

TEST_P(Seed, IsAccepted) {
  const Input &in = GetParam();
  llvm::Error e = fuzz::entryFor(in.target)(readInput(in.path));
  EXPECT_FALSE(bool(e)) << toString(std::move(e));
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Seed,
                         testing::ValuesIn(inputsUnder(STRATA_FUZZ_DIR
                                                       "/corpus")),
                         testName);

} // namespace
