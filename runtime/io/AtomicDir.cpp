//===- AtomicDir.cpp - All-or-nothing output directories ------------------===//
#include "runtime/io/AtomicDir.h"

#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"

namespace strata {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// True if `dir` is a directory without entries.
static bool isEmptyDir(llvm::StringRef dir) {
  std::error_code ec;
  llvm::sys::fs::directory_iterator it(dir, ec);
  return !ec && it == llvm::sys::fs::directory_iterator();
}

llvm::Error writeDirectoryAtomically(
    llvm::StringRef dir,
    llvm::function_ref<llvm::Error(llvm::StringRef)> write) {
  bool exists = llvm::sys::fs::exists(dir);
  if (exists && !isEmptyDir(dir))
    return fail(dir + ": the output directory exists and is not empty "
                      "(choose a new one or remove it)");
  std::string staging = atomicTempPath(dir);
  llvm::sys::fs::remove_directories(staging);
  if (std::error_code ec = llvm::sys::fs::create_directories(staging))
    return fail(staging + ": cannot create (" + ec.message() + ")");
  llvm::Error err = write(staging);
  if (!err && exists)
    if (std::error_code ec = llvm::sys::fs::remove(dir))
      err = fail(dir + ": cannot replace (" + ec.message() + ")");
  if (!err)
    if (std::error_code ec = llvm::sys::fs::rename(staging, dir))
      err = fail(dir + ": cannot rename '" + staging + "' to it (" +
                 ec.message() + ")");
  if (err)
    llvm::sys::fs::remove_directories(staging);
  return err;
}

} // namespace strata
