//===- OpKernels.h - Hand-written CUDA kernels of the ops -----------------===//
//
// The ops codegen does not render (runtime/cuda/CudaDevice.h runs those
// through generated kernels) have hand-written CUDA C kernels under
// runtime/cuda/kernels/*.cu, in the dialect of Driver.h so they run on a GPU
// and in interpret mode alike. All of them form one module, loaded when a
// CudaDevice is created. Each op has a launcher: a host function that
// checks the node's dtypes and shapes, picks the grid and enqueues the
// kernel(s) on the launch's stream. Kernels are deterministic: no float
// atomics; every reduction has a fixed order whatever the grid.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/cuda/Driver.h"

#include "llvm/ADT/StringRef.h"

#include <mutex>
#include <vector>

namespace strata::cuda {

/// The module of hand-written kernels, and scratch memory for launchers.
class OpKernelModule {
public:
  OpKernelModule(Driver &driver, std::unique_ptr<Module> module)
      : driver_(driver), module_(std::move(module)) {}
  Driver &driver() const { return driver_; }
  /// Kernel `name` of the module.
  llvm::Expected<Function> kernel(llvm::StringRef name) const {
    return driver_.function(*module_, name);
  }
  /// Device memory of at least `bytes` for launches on `stream`: one buffer
  /// per stream, reused by every launch there (stream order keeps them
  /// apart) and replaced by a larger one when needed. Buffers live as long
  /// as the module (a replaced one may still be in use by queued work).
  llvm::Expected<void *> scratch(StreamHandle stream, int64_t bytes) const;
  /// Makes the stream's buffer at least `bytes` now (CudaDevice::prepare,
  /// before any launch of a graph), freeing the one it replaces once the
  /// stream is idle, so launches find it and the device holds one buffer.
  llvm::Error reserve(StreamHandle stream, int64_t bytes) const;
  ~OpKernelModule();

private:
  struct Scratch {
    StreamHandle stream;
    void *ptr;
    int64_t bytes;
  };
  Driver &driver_;
  std::unique_ptr<Module> module_;
  mutable std::mutex mutex_;
  mutable std::vector<Scratch> scratch_;   // the current buffer per stream
  mutable std::vector<DevicePtr> buffers_; // every buffer allocated
};

/// What a launcher gets: the node, its device buffers, the stream.
struct OpLaunch {
  const OpKernelModule &kernels;
  const Graph &g;
  const Node &node;
  llvm::ArrayRef<const void *> operands;
  llvm::ArrayRef<void *> results;
  const LaunchContext &ctx;
  StreamHandle stream;

  const TensorType &inType(int i) const { return g.type(node.operands[i]); }
  const TensorType &outType(int i) const { return g.type(node.results[i]); }
};

using OpLauncher = llvm::Error (*)(const OpLaunch &);

/// The launcher of `node` of `g`, or null if it has no hand-written kernel
/// (or not for its dtypes).
OpLauncher opLauncher(const Graph &g, const Node &node);

/// Bytes of OpKernelModule::scratch the launcher of `node` takes (0: none
/// or no launcher).
int64_t opScratchBytes(const Graph &g, const Node &node);

/// The CUDA C source of every hand-written kernel, the runtime's own
/// (kernels/Builtins.cu) included: one module.
llvm::StringRef opKernelSource();

/// Enqueues `f` on `stream` on 1-D blocks of `threads` threads, enough
/// blocks for `count` work items (at most 65535: kernels grid-stride).
llvm::Error launch1d(Driver &driver, StreamHandle stream, Function f,
                     int64_t count, void **params, unsigned threads = 256);
/// launch1d on the launch's stream.
inline llvm::Error launch1d(const OpLaunch &a, Function f, int64_t count,
                            void **params, unsigned threads = 256) {
  return launch1d(a.kernels.driver(), a.stream, f, count, params, threads);
}

} // namespace strata::cuda
