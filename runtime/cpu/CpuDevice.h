//===- CpuDevice.h - A virtual CPU device with its own stream thread -------===//
//
// Work enqueued on a CpuDevice runs in order on the device's worker thread, so
// N CpuDevices in one process behave like N independent accelerators (and the
// executor sees the same asynchronous interface as on CUDA). Kernels come from
// runtime/kernels through the per-op table in CpuOpKernels.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace strata {

class CpuDevice : public Device {
public:
  explicit CpuDevice(int index = 0);
  ~CpuDevice() override;

  std::string name() const override;
  bool supports(const Graph &g, const Node &node) const override;
  /// Compiles or loads the generated kernels of g's fused nodes
  /// (runtime/cpu/FusedKernels.h).
  llvm::Error prepare(const Graph &g) override;
  bool isHostMemory() const override { return true; }
  void *allocate(int64_t bytes) override;
  void deallocate(void *ptr) override;
  void copyFromHost(void *dst, const void *src, int64_t bytes) override;
  void copyToHost(void *dst, const void *src, int64_t bytes) override;
  void copy(void *dst, const void *src, int64_t bytes) override;
  void fill(void *dst, int64_t bytes, int value) override;
  void accumulate(void *acc, const void *x, int64_t count) override;
  void scale(void *x, int64_t count, float factor) override;
  void launch(const Graph &g, const Node &node,
              llvm::ArrayRef<const void *> operands,
              llvm::ArrayRef<void *> results,
              const LaunchContext &ctx) override;
  llvm::Error synchronize() override;

  /// Enqueues arbitrary host work on this device's stream.
  void enqueue(std::function<llvm::Error()> work);

private:
  void workerLoop();
  void enqueueCopy(const char *what, void *dst, const void *src,
                   int64_t bytes);
  /// enqueue, recorded as an event of the trace when one is set.
  void enqueueTraced(std::string name, const char *category, int64_t bytes,
                     std::function<llvm::Error()> work);

  int index_;
  std::mutex mu_;
  // Two waits: the worker for work, synchronize() for an empty stream. One
  // shared condition variable woke every waiting caller after every kernel
  // (a futex wake and a context switch per node of a program).
  std::condition_variable workCv_, doneCv_;
  std::deque<std::function<llvm::Error()>> queue_;
  int64_t pending_ = 0;  // enqueued and not finished
  bool stop_ = false;
  std::string firstError_;
  std::thread worker_;
};

/// Runs the CPU kernel of `node` synchronously on the calling thread.
llvm::Error runCpuKernel(const Graph &g, const Node &node,
                         llvm::ArrayRef<const void *> operands,
                         llvm::ArrayRef<void *> results,
                         const LaunchContext &ctx);
/// Whether runCpuKernel handles `node` (op and dtypes).
bool cpuKernelSupports(const Graph &g, const Node &node);

} // namespace strata
