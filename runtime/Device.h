//===- Device.h - The narrow backend interface
//-----------------------------===//
//
// A Device owns memory and runs op kernels asynchronously on streams:
// ordered queues of work (stream 0 always exists; createStream adds more).
// Work on one stream runs in order; streams order against each other only
// through events (record on one, wait on another), as on CUDA. The executor
// is backend-neutral: it allocates buffers, enqueues copies and launches,
// and synchronizes. CPU and CUDA implement this.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace strata {

class Communicators;
class Trace;

using StreamId = int32_t;
constexpr StreamId kDefaultStream = 0;

class KernelModule;

/// Per-launch facts a kernel may need beyond its operands.
struct LaunchContext {
  uint64_t seed = 0; // dropout key
  uint64_t step = 0; // dropout counter word (training step)
  uint64_t microbatch = 0;
  const Mesh *mesh = nullptr;       // null for a serial graph
  int64_t rank = 0;                 // this device's rank in `mesh`
  Communicators *comms = nullptr;   // its groups (runtime/comm); null if serial
  StreamId stream = kDefaultStream; // where the launch is enqueued
  /// What prepare() built for the launched graph (the Executable sets it).
  const KernelModule *module = nullptr;
};

/// The kernels a device built for one graph at prepare() (CPU: the loaded
/// library of generated C++; CUDA: a module of cubins). It lives as long as
/// the Executable that launches the graph's nodes.
class KernelModule {
public:
  virtual ~KernelModule() = default;
};

/// A point in a stream's work, recorded there and waited for elsewhere.
class Event {
public:
  virtual ~Event() = default;
};

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;

  /// Does this device have a kernel for `node`? (Glow's isOpSupported.)
  virtual bool supports(const Graph &g, const Node &node) const = 0;

  /// Builds what this device needs per graph before the graph's first
  /// launch (the CPU compiles the generated kernels of fused nodes), so
  /// errors surface here. Executable::create calls it and passes the module
  /// with every launch (LaunchContext::module); null: nothing to build.
  virtual llvm::Expected<std::unique_ptr<KernelModule>>
  prepare(const Graph &g) {
    return nullptr;
  }

  /// Whether device buffers are plain host memory (CPU devices), so host
  /// code may read and write them directly after synchronize().
  virtual bool isHostMemory() const = 0;

  virtual void *allocate(int64_t bytes) = 0;
  virtual void deallocate(void *ptr) = 0;
  /// Device memory free now, for devices with a memory of their own (the
  /// trainer checks a plan's peak against it before allocating); none for
  /// host-memory devices, whose runs runtime/train/MemoryCheck checks.
  virtual std::optional<int64_t> freeBytes() { return std::nullopt; }
  /// Device memory the device itself takes, beyond the plans' buffers, to
  /// run `graphs` (its kernels' scratch, a GEMM workspace): the trainer
  /// adds it to the planned peak it checks against freeBytes().
  virtual int64_t workspaceBytes(llvm::ArrayRef<const Graph *> graphs) {
    return 0;
  }

  /// A new stream (an ordered queue of work).
  virtual StreamId createStream() = 0;
  virtual std::unique_ptr<Event> createEvent() = 0;
  /// `event` happens when `stream` reaches this point of its work.
  virtual void record(Event &event, StreamId stream) = 0;
  /// Work enqueued on `stream` after this call waits for `event`'s latest
  /// record (made before this call).
  virtual void wait(StreamId stream, Event &event) = 0;

  /// Asynchronous copies on `stream`: host to device, device to host, and
  /// within this device's memory.
  void copyFromHost(void *dst, const void *src, int64_t bytes,
                    StreamId stream = kDefaultStream) {
    enqueueCopy(CopyKind::HostToDevice, dst, src, bytes, stream);
  }
  void copyToHost(void *dst, const void *src, int64_t bytes,
                  StreamId stream = kDefaultStream) {
    enqueueCopy(CopyKind::DeviceToHost, dst, src, bytes, stream);
  }
  void copy(void *dst, const void *src, int64_t bytes,
            StreamId stream = kDefaultStream) {
    enqueueCopy(CopyKind::DeviceToDevice, dst, src, bytes, stream);
  }
  /// Sets `bytes` bytes at `dst` to `value`.
  void fill(void *dst, int64_t bytes, int value,
            StreamId stream = kDefaultStream) {
    enqueueFill(dst, bytes, value, stream);
  }
  /// The runtime's own kernel on an f32 buffer of `count` elements:
  /// x[i] *= factor (the gradients' average over microbatches).
  void scale(void *x, int64_t count, float factor,
             StreamId stream = kDefaultStream) {
    enqueueScale(x, count, factor, stream);
  }

  /// Enqueues host work on `stream`: it runs once the stream reaches it
  /// (cuLaunchHostFunc on CUDA); an error is reported as a kernel's.
  virtual void enqueueHost(std::function<llvm::Error()> work,
                           StreamId stream = kDefaultStream) = 0;

  /// Enqueues the kernel of `node` on ctx.stream: operands[i] / results[i]
  /// point to device buffers of the node's operand / result types.
  virtual void launch(const Graph &g, const Node &node,
                      llvm::ArrayRef<const void *> operands,
                      llvm::ArrayRef<void *> results,
                      const LaunchContext &ctx) = 0;

  /// Waits for the work of every stream; returns the first kernel error,
  /// if any.
  virtual llvm::Error synchronize() = 0;
  /// Waits for the work of `stream` (and what it waits for through
  /// events) only; returns the first kernel error, if any. A device's
  /// other streams, such as a CUDA rank's NCCL streams with pipeline sends
  /// waiting for their receivers, may still run.
  virtual llvm::Error synchronizeStream(StreamId stream) {
    (void)stream;
    return synchronize();
  }

  /// Records this device's copies and collectives into `trace` as rank
  /// `rank`'s (null: stop recording). Set between runs.
  void setTrace(Trace *trace, int64_t rank) {
    trace_ = trace;
    traceRank_ = rank;
  }

protected:
  enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };
  virtual void enqueueCopy(CopyKind kind, void *dst, const void *src,
                           int64_t bytes, StreamId stream) = 0;
  virtual void enqueueFill(void *dst, int64_t bytes, int value,
                           StreamId stream) = 0;
  virtual void enqueueScale(void *x, int64_t count, float factor,
                            StreamId stream) = 0;

  Trace *trace_ = nullptr;
  int64_t traceRank_ = 0;
};

} // namespace strata
