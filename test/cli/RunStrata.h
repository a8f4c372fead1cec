//===- RunStrata.h - Run the strata binary and capture its output ---------===//
#pragma once

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::test {

struct RunResult {
  int rc = -1;
  std::string out, err;
};

inline std::string slurp(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

/// Runs `program` with `argv` (argv[0] included), capturing stdout and
/// stderr.
inline RunResult runProgram(llvm::StringRef program,
                            const std::vector<std::string> &args) {
  llvm::SmallString<128> outPath, errPath;
  llvm::sys::fs::createTemporaryFile("strata-out", "txt", outPath);
  llvm::sys::fs::createTemporaryFile("strata-err", "txt", errPath);
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef("/dev/null"),
                                                 outPath.str(), errPath.str()};
  RunResult r;
  std::string msg;
  r.rc = llvm::sys::ExecuteAndWait(program, argv, llvm::None, redirects,
                                   /*SecondsToWait=*/120, 0, &msg);
  EXPECT_TRUE(msg.empty()) << msg;
  r.out = slurp(outPath);
  r.err = slurp(errPath);
  llvm::sys::fs::remove(outPath);
  llvm::sys::fs::remove(errPath);
  return r;
}

/// Runs `strata args...`, capturing stdout and stderr.
inline RunResult runStrata(const std::vector<std::string> &args) {
  std::vector<std::string> argv = {STRATA_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProgram(STRATA_BIN, argv);
}

/// Runs `strata args...` in the working directory `cwd`.
inline RunResult runStrataIn(const std::string &cwd,
                             const std::vector<std::string> &args) {
  std::vector<std::string> argv = {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd,
                                   STRATA_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProgram("/bin/sh", argv);
}

/// A fresh temporary directory, removed with the object.
class TempDir {
public:
  TempDir() { llvm::sys::fs::createUniqueDirectory("strata-cli", path_); }
  ~TempDir() { llvm::sys::fs::remove_directories(path_); }
  std::string path(llvm::StringRef name) const {
    return (path_ + "/" + name).str();
  }
  /// Writes `content` to `name` and returns its path.
  std::string write(llvm::StringRef name, llvm::StringRef content) const {
    std::string p = path(name);
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    EXPECT_FALSE(ec) << p;
    os << content;
    return p;
  }
  /// Names of the entries in the directory.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path_, ec), end; it != end && !ec;
         it.increment(ec))
      out.push_back(it->path());
    return out;
  }

private:
  llvm::SmallString<128> path_;
};

inline std::string example(llvm::StringRef name) {
  return (llvm::Twine(STRATA_SOURCE_DIR) + "/examples/" + name + ".textproto")
      .str();
}

} // namespace strata::test
