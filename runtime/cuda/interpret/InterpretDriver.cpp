//===- InterpretDriver.cpp - The CUDA driver emulated on the host ---------===//
#include "runtime/cuda/interpret/InterpretDriver.h"
#include "runtime/cuda/interpret/ReferenceGemm.h"

#include "runtime/cpu/HostCompiler.h"
#include "runtime/cpu/HostStreams.h"

#include "llvm/ADT/StringExtras.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace strata::cuda {

namespace {

const char kSimtHeader[] =
#include "runtime/cuda/interpret/SimtText.inc"
    ;

constexpr int64_t kGuard = 256;
constexpr uint8_t kPoison = 0xFF, kGuardByte = 0xFD;

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// strata_simt::Launch (Simt.h), as the kernels' entry points take it.
struct SimtLaunch {
  Dim3 grid, block;
  bool fibers;
  char *error;
};
using EntryFn = void *(*)(int op, const SimtLaunch *l, void **params,
                          void *packed);

struct Kernel {
  std::string name;
  EntryFn entry;
  bool fibers;
};

class InterpretModule : public Module {
public:
  std::map<std::string, Kernel, std::less<>> kernels;
};

/// Host compiler flags: no strict aliasing, since kernels read float arrays
/// as float4; no fortified longjmp, which refuses the jumps between fiber
/// stacks (Simt.h).
constexpr llvm::StringLiteral kFlags[] = {"-O2", "-w", "-fno-strict-aliasing",
                                          "-U_FORTIFY_SOURCE"};
/// kFlags with Simt.h's per-thread state in static TLS (faster).
constexpr llvm::StringLiteral kStaticTlsFlags[] = {
    "-O2", "-w", "-fno-strict-aliasing", "-U_FORTIFY_SOURCE",
    "-DSTRATA_SIMT_STATIC_TLS"};

/// The kernels of a module's source (see Driver.h for the dialect), and
/// which of them synchronize: their body, or a function they call
/// (transitively), uses __syncthreads, __syncwarp or a shuffle. The others
/// run their threads without fibers. Top-level definitions are found by
/// brace depth (the dialect has no block comments); a name counts as
/// called where it appears.
struct ModuleKernels {
  std::vector<std::string> names;
  std::set<std::string> synchronizing;
};

ModuleKernels moduleKernels(llvm::StringRef text) {
  // Without comments and preprocessor lines, whose parentheses and braces
  // would mislead the parse.
  std::string code;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [line, next] = rest.split('\n');
    rest = next;
    if (line.ltrim().startswith("#"))
      continue;
    code += line.substr(0, line.find("//")).str() + "\n";
  }
  llvm::StringRef source = code;
  struct Definition {
    std::string name;
    llvm::StringRef body;
  };
  std::vector<Definition> defs;
  ModuleKernels m;
  size_t depth = 0, start = 0, open = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '{' && depth++ == 0)
      open = i;
    if (c == '}' && depth && --depth == 0) {
      std::string text = source.slice(start, open).str();
      size_t bounds = text.find("__launch_bounds__(");
      if (bounds != std::string::npos)
        text.erase(bounds, text.find(')', bounds) + 1 - bounds);
      llvm::StringRef head = text;
      size_t paren = head.find('(');
      llvm::StringRef name = head.substr(0, paren).rtrim();
      size_t from = name.find_last_of(" \t\n*&>");
      name = from == llvm::StringRef::npos ? name : name.substr(from + 1);
      defs.push_back({name.str(), source.slice(open, i + 1)});
      if (head.contains("__global__"))
        m.names.push_back(name.str());
      start = i + 1;
    }
    if (c == ';' && depth == 0)
      start = i + 1;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Definition &d : defs) {
      if (m.synchronizing.count(d.name))
        continue;
      bool syncs = d.body.contains("__syncthreads") ||
                   d.body.contains("__syncwarp") || d.body.contains("__shfl");
      for (const std::string &f : m.synchronizing)
        syncs |= d.body.contains(f + "(") || d.body.contains(f + "<");
      if (syncs) {
        m.synchronizing.insert(d.name);
        changed = true;
      }
    }
  }
  return m;
}

class InterpretDriver : public Driver {
public:
  explicit InterpretDriver(int64_t capacity) {
    info_.name = "cuda-interpret (SIMT on the host)";
    info_.major = 9;
    info_.minor = 0;
    info_.multiprocessors = 4;
    info_.totalBytes = capacity > 0 ? capacity
                                    : int64_t(sysconf(_SC_PHYS_PAGES)) *
                                          int64_t(sysconf(_SC_PAGESIZE));
  }
  ~InterpretDriver() override {
    streams_.drain();
    for (auto &[ptr, a] : allocations_)
      std::free(a.base);
  }

  llvm::StringRef kind() const override { return "cuda-interpret"; }
  bool hostAddressable() const override { return true; }
  const DeviceInfo &info() const override { return info_; }

  llvm::Expected<std::pair<int64_t, int64_t>> memoryInfo() override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::make_pair(info_.totalBytes - allocated_, info_.totalBytes);
  }

  llvm::Expected<DevicePtr> allocate(int64_t bytes) override {
    int64_t padded =
        (std::max<int64_t>(bytes, 1) + kGuard - 1) / kGuard * kGuard;
    std::lock_guard<std::mutex> lock(mu_);
    if (allocated_ + padded > info_.totalBytes)
      return err("out of device memory: " + llvm::Twine(bytes) +
                 " bytes wanted, " +
                 llvm::Twine(info_.totalBytes - allocated_) + " free");
    char *base = static_cast<char *>(
        std::aligned_alloc(size_t(kGuard), size_t(padded + 2 * kGuard)));
    if (!base)
      return err("out of host memory for " + llvm::Twine(bytes) + " bytes");
    std::memset(base, kGuardByte, size_t(kGuard));
    std::memset(base + kGuard, kPoison, size_t(bytes));
    std::memset(base + kGuard + bytes, kGuardByte,
                size_t(padded - bytes + kGuard));
    DevicePtr ptr = DevicePtr(base + kGuard);
    allocations_[ptr] = {base, bytes, padded};
    allocated_ += padded;
    return ptr;
  }

  llvm::Error free(DevicePtr ptr) override {
    streams_.drain(); // as cuMemFree: after the work that may use it
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.find(ptr);
    if (it == allocations_.end())
      return err("free of 0x" + llvm::utohexstr(ptr) +
                 ", which is not an allocation");
    std::free(it->second.base);
    allocated_ -= it->second.padded;
    allocations_.erase(it);
    return llvm::Error::success();
  }

  llvm::Expected<void *> allocateHost(int64_t bytes) override {
    size_t size = size_t((std::max<int64_t>(bytes, 1) + 4095) / 4096 * 4096);
    void *p = std::aligned_alloc(4096, size);
    if (!p)
      return err("out of host memory for " + llvm::Twine(bytes) + " bytes");
    std::lock_guard<std::mutex> lock(mu_);
    hostAllocations_.insert(p);
    return p;
  }
  llvm::Error freeHost(void *p) override {
    streams_.drain(); // after the copies that may read it
    std::lock_guard<std::mutex> lock(mu_);
    if (!hostAllocations_.erase(p))
      return err("freeHost of memory allocateHost did not return");
    std::free(p);
    return llvm::Error::success();
  }

  llvm::Expected<StreamHandle> createStream() override {
    return toHandle(streams_.createStream());
  }
  llvm::Error destroyStream(StreamHandle) override {
    return llvm::Error::success(); // workers live as long as the driver
  }
  llvm::Expected<EventHandle> createEvent() override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::make_unique<HostEvent>());
    return events_.back().get();
  }
  llvm::Error destroyEvent(EventHandle) override {
    return llvm::Error::success(); // freed with the driver
  }
  llvm::Error record(EventHandle e, StreamHandle s) override {
    streams_.record(*static_cast<HostEvent *>(e), toIndex(s));
    return llvm::Error::success();
  }
  llvm::Error wait(StreamHandle s, EventHandle e) override {
    streams_.wait(toIndex(s), *static_cast<HostEvent *>(e));
    return llvm::Error::success();
  }
  /// As cuStreamSynchronize: `s`'s work only (a pipeline send still
  /// waiting for its receiver on a communication stream does not hold a
  /// synchronize of the compute stream). Errors are the context's: the
  /// first of any stream.
  llvm::Error synchronize(StreamHandle s) override {
    return streams_.synchronize(toIndex(s));
  }

  llvm::Error copyToDevice(DevicePtr dst, const void *src, int64_t bytes,
                           StreamHandle s) override {
    if (auto e = checkRange(dst, bytes, "copy to device"))
      return e;
    return enqueue(s, "copy to device", [=] {
      std::memcpy(reinterpret_cast<void *>(dst), src, size_t(bytes));
    });
  }
  llvm::Error copyToHost(void *dst, DevicePtr src, int64_t bytes,
                         StreamHandle s) override {
    if (auto e = checkRange(src, bytes, "copy to host"))
      return e;
    return enqueue(s, "copy to host", [=] {
      std::memcpy(dst, reinterpret_cast<const void *>(src), size_t(bytes));
    });
  }
  llvm::Error copyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes,
                           StreamHandle s) override {
    if (auto e = checkRange(dst, bytes, "copy on device"))
      return e;
    if (auto e = checkRange(src, bytes, "copy on device"))
      return e;
    return enqueue(s, "copy on device", [=] {
      std::memmove(reinterpret_cast<void *>(dst),
                   reinterpret_cast<const void *>(src), size_t(bytes));
    });
  }
  llvm::Error fill(DevicePtr dst, uint8_t value, int64_t bytes,
                   StreamHandle s) override {
    if (auto e = checkRange(dst, bytes, "fill"))
      return e;
    return enqueue(s, "fill", [=] {
      std::memset(reinterpret_cast<void *>(dst), value, size_t(bytes));
    });
  }
  llvm::Error launchHost(std::function<llvm::Error()> fn,
                         StreamHandle s) override {
    streams_.push(toIndex(s), std::move(fn));
    return llvm::Error::success();
  }

  llvm::Error gemm(const Gemm &g, StreamHandle s) override {
    if (auto e = checkGemm(g))
      return e;
    {
      // A GPU's first GEMM takes the cuBLASLt workspace (RealDriver); the
      // reference GEMM needs none, so it is only counted.
      std::lock_guard<std::mutex> lock(mu_);
      if (!gemmWorkspace_) {
        if (allocated_ + kGemmWorkspaceBytes > info_.totalBytes)
          return err("out of device memory for the cuBLASLt workspace: " +
                     llvm::Twine(kGemmWorkspaceBytes) + " bytes wanted, " +
                     llvm::Twine(info_.totalBytes - allocated_) + " free");
        allocated_ += kGemmWorkspaceBytes;
        gemmWorkspace_ = true;
      }
    }
    return enqueue(s, "gemm", [g] { runReferenceGemm(g); });
  }

  llvm::Expected<std::unique_ptr<Module>>
  loadModule(llvm::StringRef source, llvm::StringRef name) override {
    ModuleKernels kernels = moduleKernels(source);
    if (kernels.names.empty())
      return err(name + " has no kernel (extern \"C\" __global__ void ...)");
    std::string text = kSimtHeader;
    text += "#line 1 \"" + name.str() + "\"\n" + source.str() + "\n";
    for (const std::string &k : kernels.names)
      text += "extern \"C\" void *strata_simt_entry_" + k +
              "(int op, const strata_simt::Launch *l, void **p, void *a) "
              "{ return strata_simt::entry(&" +
              k + ", op, l, p, a); }\n";
    // The fast build (Simt.h's state in static TLS) first; the process
    // may have no static TLS left for it (glibc keeps a small surplus for
    // dlopen), then the general-dynamic one.
    void *handle = nullptr;
    std::string lib, why;
    for (llvm::ArrayRef<llvm::StringLiteral> flags :
         {llvm::ArrayRef<llvm::StringLiteral>(kStaticTlsFlags),
          llvm::ArrayRef<llvm::StringLiteral>(kFlags)}) {
      auto built = buildSharedLibrary(text, flags, "interpret");
      if (!built)
        return err(name + ": " + llvm::toString(built.takeError()));
      lib = *built;
      // Never closed: kernels may be queued when the module goes.
      if ((handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
      why = dlerror();
      if (!llvm::StringRef(why).contains("static TLS"))
        break;
    }
    if (!handle)
      return err("cannot load " + lib + " (" + why + ")");
    auto module = std::make_unique<InterpretModule>();
    for (const std::string &k : kernels.names) {
      auto entry = reinterpret_cast<EntryFn>(
          dlsym(handle, ("strata_simt_entry_" + k).c_str()));
      if (!entry)
        return err(lib + " has no entry point for kernel " + k);
      module->kernels[k] = Kernel{k, entry, kernels.synchronizing.count(k) > 0};
    }
    return std::unique_ptr<Module>(std::move(module));
  }

  llvm::Expected<Function> function(Module &m,
                                    llvm::StringRef kernel) override {
    auto &im = static_cast<InterpretModule &>(m);
    auto it = im.kernels.find(kernel);
    if (it == im.kernels.end())
      return err("the module has no kernel " + kernel);
    return &it->second;
  }

  llvm::Error launch(Function f, Dim3 grid, Dim3 block, unsigned sharedBytes,
                     StreamHandle s, void **params) override {
    const Kernel &k = *static_cast<const Kernel *>(f);
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z ||
        block.x * block.y * block.z > 1024)
      return err("kernel " + k.name + ": invalid launch (grid " + dims(grid) +
                 ", block " + dims(block) + "; blocks hold 1 to 1024 threads)");
    // Freed with the work, run or skipped (after an earlier error).
    std::shared_ptr<void> packed(
        k.entry(0, nullptr, params, nullptr),
        [entry = k.entry](void *p) { entry(2, nullptr, nullptr, p); });
    streams_.push(toIndex(s), [this, &k, grid, block, packed] {
      char error[512] = {0};
      SimtLaunch l{grid, block, k.fibers, error};
      k.entry(1, &l, nullptr, packed.get());
      if (error[0])
        return err("kernel " + k.name + ": " + error);
      return checkGuards("kernel " + k.name);
    });
    return llvm::Error::success();
  }

private:
  struct Allocation {
    char *base;
    int64_t bytes, padded;
  };

  static StreamHandle toHandle(int32_t index) {
    return reinterpret_cast<StreamHandle>(intptr_t(index) + 1);
  }
  static int32_t toIndex(StreamHandle s) {
    return s ? int32_t(reinterpret_cast<intptr_t>(s) - 1) : 0;
  }
  static std::string dims(Dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" +
           std::to_string(d.z);
  }

  /// [ptr, ptr + bytes) must lie in one allocation.
  llvm::Error checkRange(DevicePtr ptr, int64_t bytes, const char *what) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.upper_bound(ptr);
    if (it != allocations_.begin()) {
      --it;
      if (ptr >= it->first &&
          ptr + uint64_t(bytes) <= it->first + uint64_t(it->second.bytes))
        return llvm::Error::success();
    }
    return err(llvm::Twine(what) + " of " + llvm::Twine(bytes) +
               " bytes at 0x" + llvm::utohexstr(ptr) +
               " is outside every device allocation");
  }

  /// The descriptor is consistent (as cuBLASLt checks) and every matrix and
  /// vector it reads or writes lies in an allocation.
  llvm::Error checkGemm(const Gemm &g) {
    if (auto e = checkGemmDescriptor(g))
      return e;
    struct Operand {
      char which;
      DevicePtr ptr;
      const char *name;
    } operands[] = {{'A', g.A, "gemm's A"},
                    {'B', g.B, "gemm's B"},
                    {'C', g.C, "gemm's C"},
                    {'X', g.aux, "gemm's aux"}};
    for (const Operand &o : operands)
      if (int64_t span = gemmSpan(g, o.which))
        if (auto e = checkRange(o.ptr, span, o.name))
          return e;
    if (g.bias)
      return checkRange(g.bias, g.m * dtypeBytes(g.c), "gemm's bias");
    return llvm::Error::success();
  }

  llvm::Error enqueue(StreamHandle s, const char *what,
                      std::function<void()> fn) {
    streams_.push(toIndex(s), [this, what, fn = std::move(fn)] {
      fn();
      return checkGuards(what);
    });
    return llvm::Error::success();
  }

  /// Every allocation's guard bytes are intact after `what`.
  llvm::Error checkGuards(const std::string &what) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &[ptr, a] : allocations_) {
      const char *data = a.base + kGuard;
      for (int64_t i = 0; i < kGuard; ++i)
        if (uint8_t(a.base[i]) != kGuardByte)
          return guardError(what, a, i - kGuard);
      for (int64_t i = a.bytes; i < a.padded + kGuard; ++i)
        if (uint8_t(data[i]) != kGuardByte)
          return guardError(what, a, i);
    }
    return llvm::Error::success();
  }

  static llvm::Error guardError(const std::string &what, Allocation &a,
                                int64_t offset) {
    llvm::Error e =
        err(what + " wrote out of bounds: byte " + llvm::Twine(offset) +
            " of an allocation of " + llvm::Twine(a.bytes) + " bytes at 0x" +
            llvm::utohexstr(DevicePtr(a.base + kGuard)));
    std::memset(a.base, kGuardByte, size_t(kGuard)); // report it once
    std::memset(a.base + kGuard + a.bytes, kGuardByte,
                size_t(a.padded - a.bytes + kGuard));
    return e;
  }

  DeviceInfo info_;
  HostStreams streams_;
  std::mutex mu_;
  std::map<DevicePtr, Allocation> allocations_;
  std::set<void *> hostAllocations_;
  int64_t allocated_ = 0;
  bool gemmWorkspace_ = false; // counted in allocated_
  std::vector<std::unique_ptr<HostEvent>> events_;
};

} // namespace

std::unique_ptr<Driver> makeInterpretDriver(int64_t capacityBytes) {
  return std::make_unique<InterpretDriver>(capacityBytes);
}

} // namespace strata::cuda
