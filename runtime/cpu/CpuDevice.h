//===- CpuDevice.h - A virtual CPU device: a thread per stream ------------===//
//
// Each stream of a CpuDevice is an ordered queue run by its own worker
// thread, so N CpuDevices in one process behave like N independent
// accelerators, and the executor sees the same asynchronous interface as on
// CUDA (events order the streams). After a kernel error the device is
// poisoned: later work is skipped, as on a GPU after a fault, and
// synchronize() reports the first error. Kernels come from
// runtime/kernels through the per-op table in CpuOpKernels.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
  StreamId createStream() override;
  std::unique_ptr<Event> createEvent() override;
  void record(Event &event, StreamId stream) override;
  void wait(StreamId stream, Event &event) override;
  void launch(const Graph &g, const Node &node,
              llvm::ArrayRef<const void *> operands,
              llvm::ArrayRef<void *> results,
              const LaunchContext &ctx) override;
  llvm::Error synchronize() override;

  /// Enqueues arbitrary host work on `stream`.
  void enqueue(std::function<llvm::Error()> work,
               StreamId stream = kDefaultStream);

protected:
  void enqueueCopy(CopyKind kind, void *dst, const void *src, int64_t bytes,
                   StreamId stream) override;
  void enqueueFill(void *dst, int64_t bytes, int value,
                   StreamId stream) override;
  void enqueueAccumulate(void *acc, const void *x, int64_t count,
                         StreamId stream) override;
  void enqueueScale(void *x, int64_t count, float factor,
                    StreamId stream) override;

private:
  struct Work {
    std::function<llvm::Error()> fn;
    /// Runs even after an error (event records, so waiters do not hang).
    bool always = false;
  };
  struct Stream {
    std::deque<Work> queue;
    std::condition_variable workCv;
    std::thread worker;
  };
  void workerLoop(Stream &s);
  void push(StreamId stream, Work work);
  /// enqueue, recorded as an event of the trace when one is set.
  void enqueueTraced(std::string name, const char *category, int64_t bytes,
                     std::function<llvm::Error()> work, StreamId stream);

  int index_;
  std::mutex mu_;
  // Two waits: a worker for its stream's work, synchronize() for every
  // stream to drain. One shared condition variable woke every waiting
  // caller after every kernel (a futex wake and a context switch per node
  // of a program).
  std::condition_variable doneCv_;
  std::vector<std::unique_ptr<Stream>> streams_;
  int64_t pending_ = 0; // enqueued on any stream and not finished
  bool stop_ = false;
  std::string firstError_;
};

/// Runs the CPU kernel of `node` synchronously on the calling thread.
llvm::Error runCpuKernel(const Graph &g, const Node &node,
                         llvm::ArrayRef<const void *> operands,
                         llvm::ArrayRef<void *> results,
                         const LaunchContext &ctx);
/// Whether runCpuKernel handles `node` (op and dtypes).
bool cpuKernelSupports(const Graph &g, const Node &node);

} // namespace strata
