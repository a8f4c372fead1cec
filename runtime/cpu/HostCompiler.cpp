//===- HostCompiler.cpp - Kernel sources to shared libraries, cached -----===//
#include "runtime/cpu/HostCompiler.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA1.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string readFileOr(llvm::StringRef path, llvm::StringRef fallback) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  return buf ? (*buf)->getBuffer().str() : fallback.str();
}

// Runs `args` (args[0] the program path) with stdout and stderr into a
// temporary file; returns the exit code and what it printed.
llvm::Expected<std::pair<int, std::string>>
runTool(llvm::ArrayRef<llvm::StringRef> args) {
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("strata-cxx", "log", log))
    return err("cannot create a temporary file (" + ec.message() + ")");
  auto remove = llvm::make_scope_exit([&] { llvm::sys::fs::remove(log); });
  // posix_spawn rather than llvm::sys::Execute*, to close every descriptor
  // of this process but the redirected three in the compiler: a rank's Gloo
  // and store connections inherited by it outlived a killed rank for the
  // whole compile, and its peers, blocked on them, saw no EOF until then
  // (or until the heartbeat timeout).
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  auto destroy =
      llvm::make_scope_exit([&] { posix_spawn_file_actions_destroy(&files); });
  std::string logPath = log.str().str();
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, logPath.c_str(),
                                   O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawn_file_actions_addclosefrom_np(&files, 3);
  std::vector<std::string> strings(args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &a : strings)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (int e = posix_spawn(&pid, argv[0], &files, nullptr, argv.data(), environ))
    return err("cannot run " + args[0] + " (" + strerror(e) + ")");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return err("cannot wait for " + args[0] + " (" + strerror(errno) + ")");
  if (!WIFEXITED(status))
    return err(args[0] + " was killed by signal " +
               llvm::Twine(WTERMSIG(status)));
  return std::make_pair(WEXITSTATUS(status), readFileOr(log, ""));
}

// What the library bytes depend on besides the source and flags: the
// compiler's identity and (for -march=native) the CPU model. Needs the
// build mutex (see buildSharedLibrary).
llvm::Expected<std::string> toolchainKey(llvm::StringRef compiler) {
  static std::string key; // once per process
  if (!key.empty())
    return key;
  auto version = runTool({compiler, "--version"});
  if (!version)
    return version.takeError();
  key = compiler.str() + "\n" + version->second;
  llvm::StringRef cpuinfo = readFileOr("/proc/cpuinfo", "");
  size_t model = cpuinfo.find("model name");
  key += "\n" + cpuinfo.substr(model, cpuinfo.find('\n', model) - model).str();
  return key;
}

} // namespace

llvm::Expected<std::string>
buildSharedLibrary(const std::string &source,
                   llvm::ArrayRef<llvm::StringLiteral> flags,
                   llvm::StringRef prefix) {
  static std::mutex buildMu;
  std::lock_guard<std::mutex> lock(buildMu);
  std::string compilerName = "c++";
  if (auto env = llvm::sys::Process::GetEnv("STRATA_CXX"))
    compilerName = *env;
  auto compiler = llvm::sys::findProgramByName(compilerName);
  if (!compiler)
    return err("host compiler '" + compilerName +
               "' not found (generated kernels need one; set STRATA_CXX)");
  auto key = toolchainKey(*compiler);
  if (!key)
    return key.takeError();
  std::string flagText;
  for (llvm::StringRef f : flags)
    flagText += f.str() + " ";
  std::string hash = llvm::toHex(
      llvm::SHA1::hash(llvm::arrayRefFromStringRef(source + *key + flagText)),
      /*LowerCase=*/true);
  std::string dir = kernelCacheDir();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return err("cannot create the kernel cache " + dir + " (" + ec.message() +
               ")");
  llvm::SmallString<128> lib(dir), src(dir);
  llvm::sys::path::append(lib, prefix + "-" + hash + ".so");
  llvm::sys::path::append(src, prefix + "-" + hash + ".cpp");
  if (llvm::sys::fs::exists(lib))
    return lib.str().str();

  std::string tag = ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  std::string tmpSrc = (src + tag).str(), tmpLib = (lib + tag).str();
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(tmpSrc);
    llvm::sys::fs::remove(tmpLib);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmpSrc, ec);
    if (!ec)
      os << source;
    if (ec || os.has_error())
      return err("cannot write " + tmpSrc + " (" + ec.message() + ")");
  }
  llvm::SmallVector<llvm::StringRef, 16> args{*compiler,    "-x",    "c++",
                                              "-std=c++20", "-fPIC", "-shared"};
  args.append(flags.begin(), flags.end());
  args.append({tmpSrc, "-o", tmpLib});
  auto run = runTool(args);
  if (!run)
    return run.takeError();
  if (run->first != 0) {
    llvm::sys::fs::rename(tmpSrc, src); // kept for inspection
    return err("compiling kernels with the host compiler failed (" + src.str() +
               "):\n" + llvm::StringRef(run->second).take_front(4000));
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpSrc, src))
    return err("cannot write " + src.str() + " (" + ec.message() + ")");
  if (std::error_code ec = llvm::sys::fs::rename(tmpLib, lib))
    return err("cannot write " + lib.str() + " (" + ec.message() + ")");
  return lib.str().str();
}

std::string kernelCacheDir() {
  llvm::SmallString<128> dir;
  if (!llvm::sys::path::cache_directory(dir)) {
    dir = llvm::sys::path::get_separator();
    llvm::sys::path::append(dir, "tmp");
  }
  llvm::sys::path::append(dir, "strata");
  return dir.str().str();
}

} // namespace strata
