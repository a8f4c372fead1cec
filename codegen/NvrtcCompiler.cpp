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
  auto out = compileCubinWithLog(source, arch, {}, fileName);
  if (!out)
    return out.takeError();
  return std::move(out->cubin);
}

llvm::Expected<CubinAndLog>
compileCubinWithLog(llvm::StringRef source, int arch,
                    llvm::ArrayRef<std::string> extraOptions,
                    llvm::StringRef fileName) {
  nvrtcProgram prog;
  std::string src = source.str(), file = fileName.str();
  if (nvrtcResult r = nvrtcCreateProgram(&prog, src.c_str(), file.c_str(), 0,
                                         nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return nvrtcError(r, "creating the program");
  auto destroy = llvm::make_scope_exit([&] { nvrtcDestroyProgram(&prog); });
  // sm_XX (not compute_XX): NVRTC emits SASS, which an older driver runs;
  // a newer NVRTC's PTX it could not JIT.
  std::string archOpt = "--gpu-architecture=sm_" + std::to_string(arch);
  std::vector<const char *> opts = {archOpt.c_str(), "--std=c++17"};
  for (const std::string &o : extraOptions)
    opts.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  if (size)
    nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  if (r != NVRTC_SUCCESS)
    return nvrtcError(r, "compiling " + file + " for sm_" + llvm::Twine(arch),
                      log);
  if (nvrtcResult e = nvrtcGetCUBINSize(prog, &size); e != NVRTC_SUCCESS)
    return nvrtcError(e, "getting the cubin size");
  CubinAndLog out;
  out.cubin.assign(size, '\0');
  if (nvrtcResult e = nvrtcGetCUBIN(prog, out.cubin.data()); e != NVRTC_SUCCESS)
    return nvrtcError(e, "getting the cubin");
  out.log = std::move(log);
  return out;
}

llvm::Expected<std::vector<KernelResources>>
parsePtxasReport(llvm::StringRef log) {
  // ptxas info    : Compiling entry function 'NAME' for 'sm_90'
  // ptxas info    : Function properties for NAME
  //     S bytes stack frame, T bytes spill stores, U bytes spill loads
  // ptxas info    : Used R registers, used B barriers, M bytes smem, ...
  std::vector<KernelResources> kernels;
  bool open = false;
  auto number = [](llvm::StringRef line, llvm::StringRef suffix) {
    size_t at = line.find(suffix);
    int64_t v = 0;
    if (at == llvm::StringRef::npos)
      return v;
    llvm::StringRef before = line.take_front(at).rtrim();
    before = before.drop_front(before.find_last_of(" ,:") + 1);
    before.getAsInteger(10, v);
    return v;
  };
  llvm::SmallVector<llvm::StringRef, 64> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (size_t at = line.find("Compiling entry function '");
        at != llvm::StringRef::npos) {
      if (open)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "ptxas report: no register count for " +
                                           kernels.back().name);
      llvm::StringRef rest = line.drop_front(at + 26);
      kernels.push_back({rest.take_until([](char c) { return c == '\''; })
                             .str()});
      open = true;
    } else if (open && line.contains("bytes stack frame")) {
      kernels.back().stackFrame = number(line, " bytes stack frame");
      kernels.back().spillStores = number(line, " bytes spill stores");
      kernels.back().spillLoads = number(line, " bytes spill loads");
    } else if (open && line.contains("Used ") && line.contains(" registers")) {
      kernels.back().registers = int(number(line, " registers"));
      kernels.back().sharedBytes = number(line, " bytes smem");
      open = false;
    }
  }
  if (open)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "ptxas report: no register count for " +
                                       kernels.back().name);
  return kernels;
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
