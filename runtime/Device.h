//===- Device.h - The narrow backend interface -----------------------------===//
//
// A Device owns memory and runs op kernels asynchronously, in order (one
// stream). The executor is backend-neutral: it allocates buffers, enqueues
// copies and launches, and synchronizes. CPU and CUDA implement this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace strata {

class Communicators;
class Trace;

/// Per-launch facts a kernel may need beyond its operands.
struct LaunchContext {
  uint64_t seed = 0;  // dropout key
  uint64_t step = 0;  // dropout counter word (training step)
  uint64_t microbatch = 0;
  const Mesh *mesh = nullptr;  // null for a serial graph
  int64_t rank = 0;            // this device's rank in `mesh`
  Communicators *comms = nullptr;  // its groups (runtime/comm); null if serial
};

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;

  /// Does this device have a kernel for `node`? (Glow's isOpSupported.)
  virtual bool supports(const Graph &g, const Node &node) const = 0;

  /// Readies what this device builds per graph before the graph's first
  /// launch (the CPU compiles the generated kernels of fused nodes), so
  /// errors surface here. Executable::create calls it.
  virtual llvm::Error prepare(const Graph &g) { return llvm::Error::success(); }

  /// Whether device buffers are plain host memory (CPU devices), so host
  /// code may read and write them directly after synchronize().
  virtual bool isHostMemory() const = 0;

  virtual void *allocate(int64_t bytes) = 0;
  virtual void deallocate(void *ptr) = 0;

  /// Asynchronous copies, ordered with launches.
  virtual void copyFromHost(void *dst, const void *src, int64_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, int64_t bytes) = 0;
  /// Device to device, within this device's memory.
  virtual void copy(void *dst, const void *src, int64_t bytes) = 0;
  virtual void fill(void *dst, int64_t bytes, int value) = 0;

  /// The runtime's own kernels on f32 buffers of `count` elements:
  /// acc[i] += x[i] (gradient accumulation) and x[i] *= factor (averaging).
  virtual void accumulate(void *acc, const void *x, int64_t count) = 0;
  virtual void scale(void *x, int64_t count, float factor) = 0;

  /// Enqueues the kernel of `node`: operands[i] / results[i] point to device
  /// buffers of the node's operand / result types.
  virtual void launch(const Graph &g, const Node &node,
                      llvm::ArrayRef<const void *> operands,
                      llvm::ArrayRef<void *> results,
                      const LaunchContext &ctx) = 0;

  /// Waits for all enqueued work; returns the first kernel error, if any.
  virtual llvm::Error synchronize() = 0;

  /// Records this device's copies and collectives into `trace` as rank
  /// `rank`'s (null: stop recording). Set between runs.
  void setTrace(Trace *trace, int64_t rank) {
    trace_ = trace;
    traceRank_ = rank;
  }

protected:
  Trace *trace_ = nullptr;
  int64_t traceRank_ = 0;
};

} // namespace strata
