//===- TextDirTest.h - A fixture with a temporary directory and a text ----===//
//
// The CUDA end-to-end tests run `strata` in a fresh directory holding a
// small training text (text.txt: 300 numbered lines of one sentence).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace strata::test {

class TextDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<128> d;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("strata-cuda", d));
    dir_ = std::string(d);
    std::ofstream text(dir_ + "/text.txt");
    for (int i = 0; i < 300; ++i)
      text << "to be or not to be, that is the question " << i << "\n";
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir_); }

  /// The file's contents, or "" if it cannot be read.
  std::string read(const std::string &path) {
    auto b = llvm::MemoryBuffer::getFile(path);
    return b ? (*b)->getBuffer().str() : "";
  }

  std::string dir_;
};

} // namespace strata::test
