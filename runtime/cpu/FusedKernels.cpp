//===- FusedKernels.cpp - Fused nodes on the CPU: generated C++ -----------===//
////
#include "runtime/cpu/FusedKernels.h"

#include "codegen/Renderer.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/kernels/Parallel.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA1.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace strata {

namespace {

/// The C++ calling convention of codegen/Renderer.h.
using KernelFn = void (*)(const void *const *in, void *const *out,
                          int64_t begin, int64_t end, uint64_t seed,
                          uint64_t step);

struct LoadedKernel {
  codegen::KernelPlan plan;
  KernelFn fn = nullptr;
};

using BodyKey = std::weak_ptr<const Graph>;

struct Registry {
  std::mutex mu;
  // Keyed by the body's ownership (owner_less): an entry can never be
  // mistaken for a later body at the same address; expired ones are pruned.
  std::map<BodyKey, LoadedKernel, std::owner_less<BodyKey>> kernels;
  std::string toolchain; // compiler identity and CPU model, once read
};

Registry &registry() {
  static Registry r;
  return r;
}

// Elements per parallel chunk, as runtime/kernels' elementwise loops.
constexpr int64_t kElemGrain = 32768;

constexpr llvm::StringLiteral kFlags[] = {"-x",
                                          "c++",
                                          "-std=c++20",
                                          "-O3",
                                          "-march=native",
                                          "-fno-math-errno",
                                          "-fno-trapping-math",
                                          "-fopenmp-simd",
                                          "-fPIC",
                                          "-shared"};

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

// What the library bytes depend on besides the source: the compiler's
// identity, its flags and (for -march=native) the CPU model.
llvm::Expected<std::string> toolchainKey(llvm::StringRef compiler) {
  std::string &key = registry().toolchain;
  if (!key.empty())
    return key;
  auto version = runTool({compiler, "--version"});
  if (!version)
    return version.takeError();
  key = compiler.str() + "\n" + version->second;
  for (llvm::StringRef f : kFlags)
    key += f.str() + " ";
  llvm::StringRef cpuinfo = readFileOr("/proc/cpuinfo", "");
  size_t model = cpuinfo.find("model name");
  key += "\n" + cpuinfo.substr(model, cpuinfo.find('\n', model) - model).str();
  return key;
}

// The shared library of `source`: from the cache, or compiled into it
// (written under a temporary name and renamed, so concurrent processes
// never load a half-written file).
llvm::Expected<std::string> buildLibrary(const std::string &source) {
  std::string compilerName = "c++";
  if (auto env = llvm::sys::Process::GetEnv("STRATA_CXX"))
    compilerName = *env;
  auto compiler = llvm::sys::findProgramByName(compilerName);
  if (!compiler)
    return err("host compiler '" + compilerName +
               "' not found (fused CPU kernels need one; set STRATA_CXX)");
  auto key = toolchainKey(*compiler);
  if (!key)
    return key.takeError();
  std::string hash =
      llvm::toHex(llvm::SHA1::hash(llvm::arrayRefFromStringRef(source + *key)),
                  /*LowerCase=*/true);
  std::string dir = fusedKernelCacheDir();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return err("cannot create the kernel cache " + dir + " (" + ec.message() +
               ")");
  llvm::SmallString<128> lib(dir), src(dir);
  llvm::sys::path::append(lib, "fused-" + hash + ".so");
  llvm::sys::path::append(src, "fused-" + hash + ".cpp");
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
  llvm::SmallVector<llvm::StringRef, 16> args{*compiler};
  args.append(std::begin(kFlags), std::end(kFlags));
  args.append({tmpSrc, "-o", tmpLib});
  auto run = runTool(args);
  if (!run)
    return run.takeError();
  if (run->first != 0) {
    llvm::sys::fs::rename(tmpSrc, src); // kept for inspection
    return err("compiling fused CPU kernels failed (" + src.str() + "):\n" +
               llvm::StringRef(run->second).take_front(4000));
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmpSrc, src))
    return err("cannot write " + src.str() + " (" + ec.message() + ")");
  if (std::error_code ec = llvm::sys::fs::rename(tmpLib, lib))
    return err("cannot write " + lib.str() + " (" + ec.message() + ")");
  return lib.str().str();
}

// Loads the kernels of `g`'s fused nodes that are not loaded. Needs the
// registry's mutex.
llvm::Error loadKernels(const Graph &g) {
  Registry &r = registry();
  for (auto it = r.kernels.begin(); it != r.kernels.end();)
    it = it->first.expired() ? r.kernels.erase(it) : std::next(it);
  std::vector<std::shared_ptr<const Graph>> bodies;
  std::vector<codegen::KernelPlan> plans;
  for (const Node &n : g.nodes()) {
    if (n.op != OpKind::Fused || !n.body || r.kernels.count(n.body) ||
        llvm::is_contained(bodies, n.body))
      continue;
    auto plan = codegen::planKernel(*n.body);
    if (!plan)
      return plan.takeError();
    bodies.push_back(n.body);
    plans.push_back(std::move(*plan));
  }
  if (plans.empty())
    return llvm::Error::success();
  codegen::KernelSource source =
      codegen::renderKernels(plans, codegen::Target::Cpp);
  auto lib = buildLibrary(source.text);
  if (!lib)
    return lib.takeError();
  // Never closed: kernels stay callable for the life of the process.
  void *handle = dlopen(lib->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return err("cannot load " + *lib + " (" + dlerror() + ")");
  for (size_t k = 0; k < plans.size(); ++k) {
    auto fn =
        reinterpret_cast<KernelFn>(dlsym(handle, source.symbols[k].c_str()));
    if (!fn)
      return err(*lib + " has no kernel " + source.symbols[k]);
    r.kernels[bodies[k]] = LoadedKernel{std::move(plans[k]), fn};
  }
  return llvm::Error::success();
}

// Rows of a column-sum block hold ~kSumBlock elements: the blocks (not the
// threads) fix where partial sums split, so results do not depend on the
// thread count.
constexpr int64_t kSumBlock = 8192;

// A kernel with column sums (codegen/KernelPlan.h): each call covers one
// block of whole rows and adds its column sums into that block's f64 row;
// the rows are then summed in block order into the results.
void runWithColumnSums(const codegen::KernelPlan &p, const LoadedKernel &k,
                       llvm::ArrayRef<const void *> in,
                       llvm::ArrayRef<void *> results,
                       const LaunchContext &ctx) {
  const int64_t cols = p.inner(), rows = p.numElements() / cols;
  const int64_t blockRows = std::max<int64_t>(1, kSumBlock / cols);
  const int64_t blocks = (rows + blockRows - 1) / blockRows;
  const size_t nSums = p.sums.size();
  std::vector<double> partial(nSums * blocks * cols, 0.0);
  auto part = [&](size_t s, int64_t b) {
    return &partial[(s * blocks + b) * cols];
  };
  kernels::parallelFor(
      0, blocks, std::max<int64_t>(1, kElemGrain / (blockRows * cols)),
      [&](int64_t lo, int64_t hi) {
        llvm::SmallVector<void *, 4> out(results.begin(), results.end());
        for (int64_t b = lo; b < hi; ++b) {
          for (size_t s = 0; s < nSums; ++s)
            out[p.sums[s].store] = part(s, b);
          k.fn(in.data(), out.data(), b * blockRows * cols,
               std::min(rows, (b + 1) * blockRows) * cols, ctx.seed, ctx.step);
        }
      });
  for (size_t s = 0; s < nSums; ++s) {
    void *dst = results[p.sums[s].store];
    bool f32 = p.body->type(p.stores[p.sums[s].store]).dtype == DType::F32;
    for (int64_t c = 0; c < cols; ++c) {
      double acc = 0;
      for (int64_t b = 0; b < blocks; ++b)
        acc += part(s, b)[c];
      if (f32)
        static_cast<float *>(dst)[c] = float(acc);
      else
        static_cast<double *>(dst)[c] = acc;
    }
  }
}

} // namespace

std::string fusedKernelCacheDir() {
  llvm::SmallString<128> dir;
  if (!llvm::sys::path::cache_directory(dir)) {
    dir = llvm::sys::path::get_separator();
    llvm::sys::path::append(dir, "tmp");
  }
  llvm::sys::path::append(dir, "strata");
  return dir.str().str();
}

bool fusedKernelSupports(const Node &node) {
  if (!node.body)
    return false;
  auto plan = codegen::planKernel(*node.body);
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return false;
  }
  return plan->anchor < 0 ||
         cpuKernelSupports(*node.body, node.body->node(plan->anchor));
}

llvm::Error prepareFusedKernels(const Graph &g) {
  std::lock_guard<std::mutex> lock(registry().mu);
  return loadKernels(g);
}

llvm::Error runFusedKernel(const Graph &g, const Node &node,
                           llvm::ArrayRef<const void *> operands,
                           llvm::ArrayRef<void *> results,
                           const LaunchContext &ctx) {
  const LoadedKernel *k;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.kernels.find(node.body);
    if (it == r.kernels.end()) {
      if (auto e = loadKernels(g))
        return e;
      it = r.kernels.find(node.body);
      if (it == r.kernels.end())
        return err("fused node (" + node.scope +
                   ") is not a node of its graph");
    }
    // The entry lives while node.body does: pruning only drops expired ones.
    k = &it->second;
  }
  const codegen::KernelPlan &p = k->plan;
  const Graph &body = *p.body;
  auto operandOf = [&](ValueId v) {
    return operands[llvm::find(body.inputs(), v) - body.inputs().begin()];
  };
  if (p.anchor >= 0) {
    const Node &anchor = body.node(p.anchor);
    llvm::SmallVector<const void *, 2> in;
    for (ValueId v : anchor.operands)
      in.push_back(operandOf(v));
    if (auto e = runCpuKernel(body, anchor, in, {results[p.anchorResult]}, ctx))
      return e;
  }
  llvm::SmallVector<const void *, 8> in;
  for (const codegen::KernelLoad &l : p.loads)
    in.push_back(l.operand < 0 ? results[p.anchorResult] : operands[l.operand]);
  llvm::SmallVector<void *, 4> out(results.begin(), results.end());
  if (p.sums.empty() && p.isRowKernel()) { // whole rows per call
    const int64_t C = p.inner();
    kernels::parallelFor(
        0, p.numElements() / C, std::max<int64_t>(1, kElemGrain / C),
        [&](int64_t lo, int64_t hi) {
          k->fn(in.data(), out.data(), lo * C, hi * C, ctx.seed, ctx.step);
        });
    return llvm::Error::success();
  }
  if (p.sums.empty()) {
    kernels::parallelFor(
        0, p.numElements(), kElemGrain, [&](int64_t lo, int64_t hi) {
          k->fn(in.data(), out.data(), lo, hi, ctx.seed, ctx.step);
        });
    return llvm::Error::success();
  }
  runWithColumnSums(p, *k, in, out, ctx);
  return llvm::Error::success();
}

} // namespace strata
