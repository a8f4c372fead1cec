//===- AtomicFileTest.cpp - All-or-nothing file replacement ---------------===//
#include "runtime/io/AtomicFile.h"

#include "test/io/TestFiles.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace strata;
using strata::test::message;
using strata::test::readBytes;
using strata::test::TempDir;
using strata::test::writeBytes;

namespace {

TEST(AtomicFile, ReplacesTheFile) {
  TempDir tmp;
  std::string path = tmp.path("f");
  writeBytes(path, "old");
  ASSERT_FALSE(writeFileAtomically(path, [](llvm::raw_ostream &os) {
    os << "new contents";
    return llvm::Error::success();
  }));
  EXPECT_EQ(readBytes(path), "new contents");
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{"f"}));
  EXPECT_EQ(atomicTempPath(path), path + ".tmp." + std::to_string(::getpid()));
}

TEST(AtomicFile, FailingWriterLeavesTheOldFile) {
  TempDir tmp;
  std::string path = tmp.path("f");
  writeBytes(path, "old");
  bool tempExisted = false;
  llvm::Error err = writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << "half of the new";
    os.flush();
    tempExisted = llvm::sys::fs::exists(atomicTempPath(path));
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "writer gave up");
  });
  EXPECT_TRUE(tempExisted);
  EXPECT_EQ(message(std::move(err)), "writer gave up");
  EXPECT_EQ(readBytes(path), "old");
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{"f"}));
}

} // namespace
