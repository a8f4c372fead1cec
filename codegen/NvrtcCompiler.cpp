//===- NvrtcCompiler.cpp - CUDA C source to cubin with NVRTC --------------===//
//
// NVRTC is loaded with dlopen on first use, so strata links and runs on
// machines without it and takes the NVRTC of the machine it runs on; the
// header gives the types only. Search order: $STRATA_NVRTC (a path), then
// the sonames of CUDA 13, 12 and 11.2 through the dynamic loader's paths,
// then the toolkit's lib directory found at configure time and
// /usr/local/cuda/lib64.
//
//===----------------------------------------------------------------------===//
#include "codegen/NvrtcCompiler.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>

namespace strata::codegen {

namespace {

// The NVRTC entry points strata uses.
struct Nvrtc {
#define STRATA_NVRTC_FN(fn) decltype(&::fn) fn = nullptr;
  STRATA_NVRTC_FN(nvrtcGetErrorString)
  STRATA_NVRTC_FN(nvrtcVersion)
  STRATA_NVRTC_FN(nvrtcGetNumSupportedArchs)
  STRATA_NVRTC_FN(nvrtcGetSupportedArchs)
  STRATA_NVRTC_FN(nvrtcCreateProgram)
  STRATA_NVRTC_FN(nvrtcDestroyProgram)
  STRATA_NVRTC_FN(nvrtcCompileProgram)
  STRATA_NVRTC_FN(nvrtcGetCUBINSize)
  STRATA_NVRTC_FN(nvrtcGetCUBIN)
  STRATA_NVRTC_FN(nvrtcGetProgramLogSize)
  STRATA_NVRTC_FN(nvrtcGetProgramLog)
#undef STRATA_NVRTC_FN
  std::string path; ///< the library loaded
  std::string why;  ///< why none was, if so

  Nvrtc() {
    std::vector<std::string> tries;
    if (const char *env = std::getenv("STRATA_NVRTC"); env && *env)
      tries.push_back(env);
    const char *sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                             "libnvrtc.so.11.2", "libnvrtc.so"};
    for (const char *so : sonames)
      tries.push_back(so);
    for (std::string dir :
         {std::string(STRATA_NVRTC_DIR), std::string("/usr/local/cuda/lib64")})
      if (!dir.empty())
        for (const char *so : sonames)
          tries.push_back(dir + "/" + so);
    void *lib = nullptr;
    for (const std::string &t : tries)
      if ((lib = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL))) {
        path = t;
        break;
      }
    if (!lib) {
      why = "NVRTC not found (tried " + llvm::join(tries, ", ") +
            "; install the CUDA toolkit's NVRTC or set STRATA_NVRTC to its "
            "libnvrtc.so)";
      return;
    }
    bool ok = true;
    auto get = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, symbol));
      ok &= fn != nullptr;
    };
    get(nvrtcGetErrorString, "nvrtcGetErrorString");
    get(nvrtcVersion, "nvrtcVersion");
    get(nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
    get(nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
    get(nvrtcCreateProgram, "nvrtcCreateProgram");
    get(nvrtcDestroyProgram, "nvrtcDestroyProgram");
    get(nvrtcCompileProgram, "nvrtcCompileProgram");
    get(nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
    get(nvrtcGetCUBIN, "nvrtcGetCUBIN");
    get(nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
    get(nvrtcGetProgramLog, "nvrtcGetProgramLog");
    if (!ok)
      why = path + " lacks an NVRTC entry point strata needs (NVRTC 11.2 "
                   "or newer is)";
  }
};

const Nvrtc &nvrtc() {
  static const Nvrtc lib;
  return lib;
}

llvm::Error nvrtcError(nvrtcResult r, const llvm::Twine &what,
                       const std::string &log = "") {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "nvrtc: " + what + ": " +
                                     nvrtc().nvrtcGetErrorString(r) +
                                     (log.empty() ? "" : "\n" + log));
}

} // namespace

llvm::Error nvrtcAvailable() {
  if (nvrtc().why.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), nvrtc().why);
}

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
  if (auto e = nvrtcAvailable())
    return e;
  const Nvrtc &api = nvrtc();
  nvrtcProgram prog;
  std::string src = source.str(), file = fileName.str();
  if (nvrtcResult r = api.nvrtcCreateProgram(&prog, src.c_str(), file.c_str(),
                                             0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return nvrtcError(r, "creating the program");
  auto destroy = llvm::make_scope_exit([&] { api.nvrtcDestroyProgram(&prog); });
  // sm_XX (not compute_XX): NVRTC emits SASS, which an older driver runs;
  // a newer NVRTC's PTX it could not JIT.
  std::string archOpt = "--gpu-architecture=sm_" + std::to_string(arch);
  std::vector<const char *> opts = {archOpt.c_str(), "--std=c++17"};
  for (const std::string &o : extraOptions)
    opts.push_back(o.c_str());
  nvrtcResult r = api.nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  size_t size = 0;
  api.nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  if (size)
    api.nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  if (r != NVRTC_SUCCESS)
    return nvrtcError(r, "compiling " + file + " for sm_" + llvm::Twine(arch),
                      log);
  if (nvrtcResult e = api.nvrtcGetCUBINSize(prog, &size); e != NVRTC_SUCCESS)
    return nvrtcError(e, "getting the cubin size");
  CubinAndLog out;
  out.cubin.assign(size, '\0');
  if (nvrtcResult e = api.nvrtcGetCUBIN(prog, out.cubin.data());
      e != NVRTC_SUCCESS)
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
      kernels.push_back(
          {rest.take_until([](char c) { return c == '\''; }).str()});
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
  if (!nvrtc().why.empty())
    return {};
  int n = 0;
  if (nvrtc().nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS)
    return {};
  std::vector<int> archs(n);
  if (nvrtc().nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

std::string nvrtcVersion() {
  if (!nvrtc().why.empty())
    return "none";
  int major = 0, minor = 0;
  nvrtc().nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace strata::codegen
