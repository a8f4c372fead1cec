//===- HostStreams.h - Streams and events as queues on host threads -------===//
//
// Each stream is an ordered queue of host work run by its own worker
// thread; streams order against each other only through events (record on
// one, wait on another), as on CUDA. After a piece of work fails the
// streams are poisoned: later work is skipped, as on a GPU after a fault,
// and synchronize() reports the first error. The CPU device and the CUDA
// backend's interpret mode run on it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

/// Records count up on the host; the stream marks them reached.
struct HostEvent {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0, reached = 0;
};

class HostStreams {
public:
  /// Starts with stream 0.
  HostStreams();
  /// Drains every stream, then stops the workers.
  ~HostStreams();

  /// A new stream's index.
  int32_t createStream();
  /// Runs `work` once `stream` reaches it (skipped after an error unless
  /// `always`).
  void push(int32_t stream, std::function<llvm::Error()> work,
            bool always = false);
  /// `event` happens when `stream` reaches this point.
  void record(HostEvent &event, int32_t stream);
  /// Later work on `stream` waits for `event`'s latest record.
  void wait(int32_t stream, HostEvent &event);
  /// Waits for the work of every stream; returns the first error.
  llvm::Error synchronize();
  /// Waits for the work of `stream` only (work it waits for on other
  /// streams through events included); returns the first error of any
  /// stream, as synchronize() does.
  llvm::Error synchronize(int32_t stream);
  /// Waits for the work of every stream; keeps the error for synchronize.
  void drain();

private:
  /// The first error (cleared), or success; mu_ held.
  llvm::Error takeFirstError();

  struct Work {
    std::function<llvm::Error()> fn;
    bool always = false; // runs even after an error (event records)
  };
  struct Stream {
    std::deque<Work> queue;
    std::condition_variable workCv;
    std::thread worker;
    int64_t pending = 0; // enqueued here and not finished
  };
  void workerLoop(Stream &s);

  std::mutex mu_;
  // Two waits: a worker for its stream's work, synchronize() for every
  // stream (or one stream) to drain. One shared condition variable woke every
  // waiting caller after every kernel (a futex wake and a context switch per
  // node of a program).
  std::condition_variable doneCv_;
  std::vector<std::unique_ptr<Stream>> streams_;
  int64_t pending_ = 0; // enqueued on any stream and not finished
  bool stop_ = false;
  std::string firstError_;
};

} // namespace strata
