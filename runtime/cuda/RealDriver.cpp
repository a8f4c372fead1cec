//===- RealDriver.cpp - The CUDA driver API through dlopen ----------------===//
//
// libcuda.so.1 is opened at run time and each entry point looked up by its
// (versioned) symbol, so strata builds and runs where no driver is
// installed and reports its absence as an error. The few driver types are
// declared here by their ABI (opaque pointers, an int result, a 64-bit
// device pointer), so no CUDA header is needed to build. Kernel sources are
// compiled by NVRTC to a cubin for the device's own sm_XX (never PTX: a
// newer NVRTC's PTX cannot be JIT-ed by an older driver).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/RealGemm.h"

#ifdef STRATA_HAVE_NVRTC
#include "codegen/NvrtcCompiler.h"
#endif

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace strata::cuda {

namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;
using CUdeviceptr = unsigned long long;
using CUhostFn = void (*)(void *);

// CUdevice_attribute values (cuda.h).
constexpr int kAttrMultiprocessors = 16, kAttrMajor = 75, kAttrMinor = 76;

struct Api {
  CUresult (*init)(unsigned);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*deviceTotalMem)(size_t *, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*memGetInfo)(size_t *, size_t *);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memHostAlloc)(void **, size_t, unsigned);
  CUresult (*memFreeHost)(void *);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*streamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*eventCreate)(CUevent *, unsigned);
  CUresult (*eventDestroy)(CUevent);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*memcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*memcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*memcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*memsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*launchHostFunc)(CUstream, CUhostFn, void *);
  CUresult (*moduleLoadData)(CUmodule *, const void *);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*getErrorString)(CUresult, const char **);
};

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

class RealModule : public Module {
public:
  CUmodule module = nullptr;
};

/// A host callback's work and where its error goes.
struct HostCall {
  std::function<llvm::Error()> fn;
  class RealDriver *driver;
};

class RealDriver : public Driver {
public:
  RealDriver(const Api &api, CUcontext ctx, DeviceInfo info)
      : api_(api), ctx_(ctx), info_(std::move(info)) {}

  llvm::StringRef kind() const override { return "cuda"; }
  bool hostAddressable() const override { return false; }
  const DeviceInfo &info() const override { return info_; }

  /// The calling thread's current context is the device's (the driver's
  /// current context is per thread; rank threads call in).
  void use() const {
    thread_local CUcontext current = nullptr;
    if (current != ctx_) {
      api_.ctxSetCurrent(ctx_);
      current = ctx_;
    }
  }

  llvm::Error check(CUresult r, const llvm::Twine &what) const {
    if (r == 0)
      return llvm::Error::success();
    const char *msg = nullptr;
    api_.getErrorString(r, &msg);
    return err("cuda: " + what + ": " + (msg ? msg : "error") + " (" +
               llvm::Twine(r) + ")");
  }

  llvm::Expected<std::pair<int64_t, int64_t>> memoryInfo() override {
    use();
    size_t free = 0, total = 0;
    if (auto e = check(api_.memGetInfo(&free, &total), "cuMemGetInfo"))
      return std::move(e);
    return std::make_pair(int64_t(free), int64_t(total));
  }
  llvm::Expected<DevicePtr> allocate(int64_t bytes) override {
    use();
    CUdeviceptr p = 0;
    if (auto e = check(api_.memAlloc(&p, size_t(std::max<int64_t>(bytes, 1))),
                       "cuMemAlloc of " + llvm::Twine(bytes) + " bytes"))
      return std::move(e);
    return DevicePtr(p);
  }
  llvm::Error free(DevicePtr p) override {
    use();
    return check(api_.memFree(p), "cuMemFree");
  }
  llvm::Expected<void *> allocateHost(int64_t bytes) override {
    use();
    void *p = nullptr;
    if (auto e =
            check(api_.memHostAlloc(&p, size_t(std::max<int64_t>(bytes, 1)),
                                    /*flags=*/0),
                  "cuMemHostAlloc of " + llvm::Twine(bytes) + " bytes"))
      return std::move(e);
    return p;
  }
  llvm::Error freeHost(void *p) override {
    use();
    return check(api_.memFreeHost(p), "cuMemFreeHost");
  }
  llvm::Expected<StreamHandle> createStream() override {
    use();
    CUstream s = nullptr;
    if (auto e = check(api_.streamCreate(&s, /*CU_STREAM_NON_BLOCKING=*/1),
                       "cuStreamCreate"))
      return std::move(e);
    return s;
  }
  llvm::Error destroyStream(StreamHandle s) override {
    use();
    return check(api_.streamDestroy(s), "cuStreamDestroy");
  }
  llvm::Expected<EventHandle> createEvent() override {
    use();
    CUevent e = nullptr;
    if (auto x = check(api_.eventCreate(&e, /*CU_EVENT_DISABLE_TIMING=*/2),
                       "cuEventCreate"))
      return std::move(x);
    return e;
  }
  llvm::Error destroyEvent(EventHandle e) override {
    use();
    return check(api_.eventDestroy(e), "cuEventDestroy");
  }
  llvm::Error record(EventHandle e, StreamHandle s) override {
    use();
    return check(api_.eventRecord(e, s), "cuEventRecord");
  }
  llvm::Error wait(StreamHandle s, EventHandle e) override {
    use();
    return check(api_.streamWaitEvent(s, e, 0), "cuStreamWaitEvent");
  }
  llvm::Error synchronize(StreamHandle s) override {
    use();
    if (auto e = check(api_.streamSynchronize(s), "cuStreamSynchronize"))
      return e;
    std::lock_guard<std::mutex> lock(mu_);
    if (hostError_.empty())
      return llvm::Error::success();
    std::string msg = std::move(hostError_);
    hostError_.clear();
    return err(msg);
  }
  llvm::Error copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                           StreamHandle s) override {
    use();
    return check(api_.memcpyHtoDAsync(dst, src, size_t(bytes), s),
                 "cuMemcpyHtoDAsync");
  }
  llvm::Error copyToHost(void *dst, DevicePtr src, int64_t bytes,
                         StreamHandle s) override {
    use();
    return check(api_.memcpyDtoHAsync(dst, src, size_t(bytes), s),
                 "cuMemcpyDtoHAsync");
  }
  llvm::Error copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                           StreamHandle s) override {
    use();
    return check(api_.memcpyDtoDAsync(dst, src, size_t(bytes), s),
                 "cuMemcpyDtoDAsync");
  }
  llvm::Error fill(DevicePtr dst, uint8_t value, int64_t bytes,
                   StreamHandle s) override {
    use();
    return check(api_.memsetD8Async(dst, value, size_t(bytes), s),
                 "cuMemsetD8Async");
  }
  llvm::Error launchHost(std::function<llvm::Error()> fn,
                         StreamHandle s) override {
    use();
    auto *call = new HostCall{std::move(fn), this};
    return check(api_.launchHostFunc(s, &RealDriver::runHost, call),
                 "cuLaunchHostFunc");
  }

  llvm::Error gemm(const Gemm &g, StreamHandle s) override {
    use();
    std::lock_guard<std::mutex> lock(gemmMu_);
    if (!gemm_) {
      auto engine = openCublasLt();
      if (!engine)
        return engine.takeError();
      CUdeviceptr ws = 0;
      if (auto e = check(api_.memAlloc(&ws, kGemmWorkspaceBytes),
                         "cuMemAlloc of the cuBLASLt workspace"))
        return e;
      gemm_ = std::move(*engine);
      gemmWorkspace_ = ws;
    }
    // One workspace: GEMMs on different streams would share it, so they
    // are serialized on the stream they are enqueued on by the caller.
    return gemm_->run(g, s, gemmWorkspace_, kGemmWorkspaceBytes);
  }

  llvm::Expected<std::unique_ptr<Module>>
  loadModule(llvm::StringRef source, llvm::StringRef name) override {
    use();
#ifdef STRATA_HAVE_NVRTC
    int arch = info_.major * 10 + info_.minor;
    auto cubin = codegen::compileCubin(source, arch, name);
    if (!cubin)
      return cubin.takeError();
    auto m = std::make_unique<RealModule>();
    if (auto e = check(api_.moduleLoadData(&m->module, cubin->data()),
                       "loading " + name + " (sm_" + llvm::Twine(arch) + ")"))
      return std::move(e);
    return std::unique_ptr<Module>(std::move(m));
#else
    return err("this strata was built without NVRTC (the CUDA toolkit was "
               "not found at configure time), so it cannot compile " +
               name);
#endif
  }
  llvm::Expected<Function> function(Module &m,
                                    llvm::StringRef kernel) override {
    use();
    CUfunction f = nullptr;
    std::string k = kernel.str();
    if (auto e = check(api_.moduleGetFunction(
                           &f, static_cast<RealModule &>(m).module, k.c_str()),
                       "cuModuleGetFunction " + kernel))
      return std::move(e);
    return f;
  }
  llvm::Error launch(Function f, Dim3 grid, Dim3 block, unsigned sharedBytes,
                     StreamHandle s, void **params) override {
    return check(api_.launchKernel(const_cast<void *>(f), grid.x, grid.y,
                                   grid.z, block.x, block.y, block.z,
                                   sharedBytes, s, params, nullptr),
                 "cuLaunchKernel");
  }

private:
  static void runHost(void *p) {
    std::unique_ptr<HostCall> call(static_cast<HostCall *>(p));
    if (llvm::Error e = call->fn()) {
      std::lock_guard<std::mutex> lock(call->driver->mu_);
      if (call->driver->hostError_.empty())
        call->driver->hostError_ = llvm::toString(std::move(e));
      else
        llvm::consumeError(std::move(e));
    }
  }

  Api api_;
  CUcontext ctx_; // the device's primary context
  DeviceInfo info_;
  std::mutex mu_;
  std::string hostError_; // the first failed host callback's
  std::mutex gemmMu_;
  std::unique_ptr<GemmEngine> gemm_; // cuBLASLt, opened at the first GEMM
  CUdeviceptr gemmWorkspace_ = 0;
};

} // namespace

llvm::Expected<std::unique_ptr<Driver>> openRealDriver(int ordinal) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return err("no CUDA driver: libcuda.so.1 cannot be loaded (" +
               llvm::Twine(dlerror()) +
               "); install the NVIDIA driver, or use --device cpu or "
               "--device cuda-interpret");
  Api a;
  std::pair<void *, const char *> symbols[] = {
      {&a.init, "cuInit"},
      {&a.deviceGetCount, "cuDeviceGetCount"},
      {&a.deviceGet, "cuDeviceGet"},
      {&a.deviceGetName, "cuDeviceGetName"},
      {&a.deviceGetAttribute, "cuDeviceGetAttribute"},
      {&a.deviceTotalMem, "cuDeviceTotalMem_v2"},
      {&a.primaryCtxRetain, "cuDevicePrimaryCtxRetain"},
      {&a.ctxSetCurrent, "cuCtxSetCurrent"},
      {&a.memGetInfo, "cuMemGetInfo_v2"},
      {&a.memAlloc, "cuMemAlloc_v2"},
      {&a.memFree, "cuMemFree_v2"},
      {&a.memHostAlloc, "cuMemHostAlloc"},
      {&a.memFreeHost, "cuMemFreeHost"},
      {&a.streamCreate, "cuStreamCreate"},
      {&a.streamDestroy, "cuStreamDestroy_v2"},
      {&a.streamSynchronize, "cuStreamSynchronize"},
      {&a.streamWaitEvent, "cuStreamWaitEvent"},
      {&a.eventCreate, "cuEventCreate"},
      {&a.eventDestroy, "cuEventDestroy_v2"},
      {&a.eventRecord, "cuEventRecord"},
      {&a.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
      {&a.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
      {&a.memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
      {&a.memsetD8Async, "cuMemsetD8Async"},
      {&a.launchHostFunc, "cuLaunchHostFunc"},
      {&a.moduleLoadData, "cuModuleLoadData"},
      {&a.moduleGetFunction, "cuModuleGetFunction"},
      {&a.launchKernel, "cuLaunchKernel"},
      {&a.getErrorString, "cuGetErrorString"},
  };
  for (auto [slot, name] : symbols) {
    void *fn = dlsym(lib, name);
    if (!fn)
      return err(llvm::Twine("libcuda.so.1 has no ") + name +
                 " (the NVIDIA driver is too old; CUDA 12 or newer is "
                 "needed)");
    std::memcpy(slot, &fn, sizeof fn);
  }
  auto fail = [&](CUresult r, const char *what) {
    const char *msg = nullptr;
    a.getErrorString(r, &msg);
    return err(llvm::Twine("cuda: ") + what + ": " + (msg ? msg : "error"));
  };
  if (CUresult r = a.init(0))
    return fail(r, "cuInit (is a GPU visible? check nvidia-smi and "
                   "CUDA_VISIBLE_DEVICES)");
  int count = 0;
  if (CUresult r = a.deviceGetCount(&count))
    return fail(r, "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count)
    return err("no CUDA device " + llvm::Twine(ordinal) + " (" +
               llvm::Twine(count) + " visible)");
  CUdevice dev = 0;
  if (CUresult r = a.deviceGet(&dev, ordinal))
    return fail(r, "cuDeviceGet");
  DeviceInfo info;
  char name[256] = {0};
  a.deviceGetName(name, sizeof name - 1, dev);
  info.name = name;
  a.deviceGetAttribute(&info.major, kAttrMajor, dev);
  a.deviceGetAttribute(&info.minor, kAttrMinor, dev);
  a.deviceGetAttribute(&info.multiprocessors, kAttrMultiprocessors, dev);
  size_t total = 0;
  a.deviceTotalMem(&total, dev);
  info.totalBytes = int64_t(total);
  CUcontext ctx = nullptr;
  if (CUresult r = a.primaryCtxRetain(&ctx, dev))
    return fail(r, "cuDevicePrimaryCtxRetain");
  if (CUresult r = a.ctxSetCurrent(ctx))
    return fail(r, "cuCtxSetCurrent");
  return std::unique_ptr<Driver>(
      std::make_unique<RealDriver>(a, ctx, std::move(info)));
}

} // namespace strata::cuda
