//===- NvrtcCompiler.cpp - CUDA C source to cubin with NVRTC --------------===//
#include "codegen/NvrtcCompiler.h"

#include "llvm/ADT/ScopeExit.h"

#include <nvrtc.h>

namespace strata::codegen {

namespace {
llvm::Error nvrtcError(nvrtcResult r, const llvm::Twine &what,
                       const std::string &log = "") {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "nvrtc: " + what + ": " +
                                     nvrtcGetErrorString(r) +
                                     (log.empty() ? "" : "\n" + log));
}
} // namespace

llvm::Expected<std::string> compileCubin(llvm::StringRef source, int arch,
                                         llvm::StringRef fileName) {
  nvrtcProgram prog;
  std::string src = source.str(), file = fileName.str();
  if (nvrtcResult r = nvrtcCreateProgram(&prog, src.c_str(), file.c_str(), 0,
                                         nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return nvrtcError(r, "creating the program");
  auto destroy = llvm::make_scope_exit([&] { nvrtcDestroyProgram(&prog); });
  std::string archOpt = "--gpu-architecture=sm_" + std::to_string(arch);
  const char *opts[] = {archOpt.c_str(), "--std=c++17"};
  nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(prog, &size);
    std::string log(size, '\0');
    if (size)
      nvrtcGetProgramLog(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
      log.pop_back();
    return nvrtcError(r, "compiling " + file + " for sm_" + llvm::Twine(arch),
                      log);
  }
  size_t size = 0;
  if (nvrtcResult e = nvrtcGetCUBINSize(prog, &size); e != NVRTC_SUCCESS)
    return nvrtcError(e, "getting the cubin size");
  std::string cubin(size, '\0');
  if (nvrtcResult e = nvrtcGetCUBIN(prog, cubin.data()); e != NVRTC_SUCCESS)
    return nvrtcError(e, "getting the cubin");
  return cubin;
}

std::vector<int> nvrtcSupportedArchs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS)
    return {};
  std::vector<int> archs(n);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace strata::codegen
