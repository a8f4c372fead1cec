//===- CpuDevice.h - A virtual CPU device: a thread per stream ------------===//
//
// Each stream of a CpuDevice is an ordered queue run by its own worker
// thread (HostStreams.h), so N CpuDevices in one process behave like N
// independent accelerators, and the executor sees the same asynchronous
// interface as on CUDA (events order the streams). After a kernel error the
// device is poisoned: later work is skipped, as on a GPU after a fault, and
// synchronize() reports the first error. Kernels come from
// runtime/kernels through the per-op table in CpuOpKernels.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/cpu/HostStreams.h"

#include <functional>
#include <memory>

namespace strata {

class CpuDevice : public Device {
public:
  explicit CpuDevice(int index = 0);
  ~CpuDevice() override;

  std::string name() const override;
  bool supports(const Graph &g, const Node &node) const override;
  /// Compiles or loads the generated kernels of g's fused nodes
  /// (runtime/cpu/FusedKernels.h).
  llvm::Expected<std::unique_ptr<KernelModule>>
  prepare(const Graph &g) override;
  bool isHostMemory() const override { return true; }
  void *allocate(int64_t bytes) override;
  void deallocate(void *ptr) override;
  StreamId createStream() override;
  std::unique_ptr<Event> createEvent() override;
  void record(Event &event, StreamId stream) override;
  void wait(StreamId stream, Event &event) override;
  void launch(const Graph &g, const Node &node,
              llvm::ArrayRef<const void *> operands,
              llvm::ArrayRef<void *> results,
              const LaunchContext &ctx) override;
  llvm::Error synchronize() override;
  void enqueueHost(std::function<llvm::Error()> work,
                   StreamId stream = kDefaultStream) override;

protected:
  void enqueueCopy(CopyKind kind, void *dst, const void *src, int64_t bytes,
                   StreamId stream) override;
  void enqueueFill(void *dst, int64_t bytes, int value,
                   StreamId stream) override;
  void enqueueScale(void *x, int64_t count, float factor,
                    StreamId stream) override;

private:
  /// enqueueHost, recorded as an event of the trace when one is set.
  void enqueueTraced(std::string name, const char *category, int64_t bytes,
                     std::function<llvm::Error()> work, StreamId stream);

  int index_;
  HostStreams streams_;
};

/// Runs the CPU kernel of `node` synchronously on the calling thread.
llvm::Error runCpuKernel(const Graph &g, const Node &node,
                         llvm::ArrayRef<const void *> operands,
                         llvm::ArrayRef<void *> results,
                         const LaunchContext &ctx);
/// Whether runCpuKernel handles `node` (op and dtypes).
bool cpuKernelSupports(const Graph &g, const Node &node);

} // namespace strata
