//===- TestFiles.h - Scratch directories and file bytes ---------*- C++ -*-===//
//
// Shared by the data and io tests: a fresh directory removed afterwards,
// whole-file reads and writes, and the message of an llvm::Error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace strata::test {

/// A new, empty directory under the system temp dir, deleted on destruction.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> p;
    std::error_code ec = llvm::sys::fs::createUniqueDirectory("strata-test", p);
    EXPECT_FALSE(ec) << ec.message();
    dir_ = std::string(p);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(dir_); }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  const std::string &dir() const { return dir_; }
  /// The path of `name` inside the directory.
  std::string path(llvm::StringRef name) const {
    llvm::SmallString<128> p(dir_);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  /// Names of the directory's entries, sorted.
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir_, ec), end; it != end && !ec;
         it.increment(ec))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    std::sort(names.begin(), names.end());
    return names;
  }

private:
  std::string dir_;
};

inline std::string readBytes(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  EXPECT_TRUE(bool(buf)) << "cannot read " << path.str();
  return buf ? (*buf)->getBuffer().str() : std::string();
}

inline void writeBytes(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  ASSERT_FALSE(ec) << ec.message();
  os << bytes;
}

/// The message of `err` ("" for success), consuming it.
inline std::string message(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}
template <typename T> std::string message(llvm::Expected<T> &value) {
  return value ? std::string() : llvm::toString(value.takeError());
}
template <typename T> std::string message(llvm::Expected<T> &&value) {
  return message(value);
}

} // namespace strata::test
