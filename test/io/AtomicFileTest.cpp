//===- AtomicFileTest.cpp - All-or-nothing file replacement ---------------===//
#include "runtime/io/AtomicFile.h"

#include "test/io/TestFiles.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
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

// A process killed mid-write (kill -9) leaves `<path>.tmp.<pid>`; the next
// write of that path removes it, but not the temporary of a live process nor
// other files.
TEST(AtomicFile, NextWriteRemovesTheTemporariesOfDeadProcesses) {
  TempDir tmp;
  std::string path = tmp.path("checkpoint.bin");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0)
    _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child); // now a dead pid
  std::string dead = path + ".tmp." + std::to_string(child);
  std::string live = path + ".tmp." + std::to_string(::getppid());
  writeBytes(dead, "half a checkpoint");
  writeBytes(live, "another writer's");
  writeBytes(tmp.path("other.bin.tmp." + std::to_string(child)), "not ours");
  ASSERT_FALSE(writeFileAtomically(path, [](llvm::raw_ostream &os) {
    os << "new";
    return llvm::Error::success();
  }));
  EXPECT_EQ(readBytes(path), "new");
  EXPECT_EQ(tmp.list(), (std::vector<std::string>{
                            "checkpoint.bin",
                            "checkpoint.bin.tmp." + std::to_string(::getppid()),
                            "other.bin.tmp." + std::to_string(child)}));
}

} // namespace
