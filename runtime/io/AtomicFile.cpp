//===- AtomicFile.cpp - All-or-nothing file replacement -------------------===//
#include "runtime/io/AtomicFile.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace strata {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string atomicTempPath(llvm::StringRef path) {
  return (path + ".tmp." + llvm::Twine(llvm::sys::Process::getProcessId()))
      .str();
}

int removeStaleTemps(llvm::StringRef path) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  std::string prefix = (llvm::sys::path::filename(path) + ".tmp.").str();
  std::error_code ec;
  int removed = 0;
  for (llvm::sys::fs::directory_iterator it(dir.empty() ? "." : dir, ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    unsigned pid;
    if (!name.consume_front(prefix) || name.getAsInteger(10, pid) || pid == 0)
      continue;
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    if (::kill(pid_t(pid), 0) != 0 && errno == ESRCH &&
        !llvm::sys::fs::remove(it->path()))
      ++removed;
  }
  return removed;
}

/// Writes, flushes and syncs `fd`, which is open on `tmp`.
static llvm::Error
writeAndSync(int fd, llvm::StringRef tmp,
             llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/false);
  llvm::Error err = write(os);
  os.flush();
  if (!err && os.has_error())
    err = fail("cannot write '" + tmp + "': " + os.error().message());
  // An unreported stream error aborts in ~raw_fd_ostream; it is reported above
  // or superseded by the writer's own error.
  os.clear_error();
  if (err)
    return err;
  if (::fsync(fd) != 0)
    return fail("cannot flush '" + tmp + "' to disk: " + std::strerror(errno));
  return llvm::Error::success();
}

/// Makes a completed rename durable; best effort, as some file systems
/// cannot sync a directory.
static void syncParentDirectory(llvm::StringRef path) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  std::string dirPath = dir.empty() ? "." : dir.str();
  int fd = ::open(dirPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  (void)::fsync(fd);
  ::close(fd);
}

/// Why `path` cannot be written at all, in the writer's words, before a
/// temporary is tried: a missing or non-directory parent, or a directory at
/// `path`.
static llvm::Error checkDestination(llvm::StringRef path) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  auto cannot = [&](const llvm::Twine &why) {
    return fail(path + ": error: cannot write: " + why);
  };
  if (!dir.empty() && !llvm::sys::fs::exists(dir))
    return cannot("the directory '" + dir +
                  "' does not exist (create it first: mkdir -p " + dir + ")");
  if (!dir.empty() && !llvm::sys::fs::is_directory(dir))
    return cannot("'" + dir + "' is not a directory");
  if (llvm::sys::fs::is_directory(path))
    return cannot("it is a directory (name a file to write)");
  return llvm::Error::success();
}

llvm::Error writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  if (llvm::Error e = checkDestination(path))
    return e;
  removeStaleTemps(path);
  std::string tmp = atomicTempPath(path);
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(tmp, fd))
    return fail("cannot create '" + tmp + "': " + ec.message());
  llvm::Error err = writeAndSync(fd, tmp, write);
  if (::close(fd) != 0 && !err)
    err = fail("cannot write '" + tmp + "': " + std::strerror(errno));
  if (!err)
    if (std::error_code ec = llvm::sys::fs::rename(tmp, path))
      err = fail("cannot rename '" + tmp + "' to '" + path +
                 "': " + ec.message());
  if (err) {
    llvm::sys::fs::remove(tmp);
    return err;
  }
  syncParentDirectory(path);
  return llvm::Error::success();
}

} // namespace strata
