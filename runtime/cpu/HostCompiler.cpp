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

#include <mutex>

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
  llvm::Optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), log.str(),
                                                 log.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(args[0], args, llvm::None, redirects, 0, 0,
                                     &message);
  if (rc < 0)
    return err("cannot run " + args[0] + " (" + message + ")");
  return std::make_pair(rc, readFileOr(log, ""));
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
