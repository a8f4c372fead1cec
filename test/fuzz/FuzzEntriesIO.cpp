//===- FuzzEntriesIO.cpp - The checkpoint and tensor archive entries ------===//
//
// Apart from FuzzEntries.cpp because LLVM 14's JSON.h does not compile with
// clang 14 and libstdc++ 12 in C++20 (std::vector<json::Value> of an
// incomplete type in a constexpr context): the fuzz build compiles the JSON
// readers as C++17 (test/fuzz/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
#include "test/fuzz/FuzzEntries.h"

#include "runtime/io/Checkpoint.h"
#include "runtime/io/TensorArchive.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace strata::fuzz {

namespace {

[[noreturn]] void fatal(const llvm::Twine &what) {
  llvm::errs() << "fuzz: " << what << "\n";
  std::abort();
}

/// A per-process scratch directory ($TMPDIR, /dev/shm under scripts/fuzz.sh)
/// for the readers that take a path; removed at exit.
class Scratch {
public:
  Scratch() {
    llvm::SmallString<128> d;
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("strata-fuzz", d))
      fatal("cannot create a scratch directory: " + ec.message());
    dir_ = std::string(d);
  }
  ~Scratch() { llvm::sys::fs::remove_directories(dir_); }

  /// Writes `bytes` to `name` in the directory; returns its path.
  std::string write(llvm::StringRef name, llvm::StringRef bytes) {
    llvm::SmallString<128> p(dir_);
    llvm::sys::path::append(p, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(p, ec);
    if (!ec)
      os << bytes;
    if (ec || (os.close(), os.has_error()))
      fatal("cannot write scratch file " + p + ": " + ec.message());
    return std::string(p);
  }
  const std::string &dir() const { return dir_; }

private:
  std::string dir_;
};

Scratch &scratch() {
  static Scratch s;
  return s;
}

} // namespace

std::string writeScratchFile(llvm::StringRef name, llvm::StringRef bytes) {
  return scratch().write(name, bytes);
}

llvm::Error checkpointFile(llvm::StringRef bytes) {
  return loadCheckpoint(writeScratchFile("checkpoint.bin", bytes)).takeError();
}

llvm::Error tensorArchive(llvm::StringRef bytes) {
  auto [index, data] = bytes.split('\0');
  scratch().write("index.json", index);
  scratch().write("data.bin", data);
  return TensorArchive::read(scratch().dir()).takeError();
}

} // namespace strata::fuzz
