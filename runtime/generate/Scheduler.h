//===- Scheduler.h - Batching concurrent requests onto one engine ---------===//
//
// `strata serve` answers many HTTP requests at once; the model runs on one
// worker thread. submit() puts sequences in a bounded queue (a full queue
// refuses at once, so a flood gets HTTP 503 instead of unbounded memory);
// the worker admits queued sequences whenever the engine has free slots and
// runs one batched decode step for everything in flight (continuous
// batching). Sinks are called on the worker thread and must not block.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/generate/Engine.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace strata::generate {

class Scheduler {
public:
  /// Told, on the worker thread, why a decoding step failed (the sequences
  /// in flight are then cancelled with that message); the strata driver
  /// prints it in its `strata serve: error:` form.
  using ErrorReport = std::function<void(const std::string &message)>;

  /// `decoder.slots()` is the largest batch; at most `maxQueue` sequences
  /// wait. Starts the worker.
  Scheduler(Decoder &decoder, const Tokenizer &tokenizer, int64_t maxQueue,
            ErrorReport reportError = nullptr);
  /// Stops the worker; sequences still queued or in flight finish as
  /// Cancelled.
  ~Scheduler();

  struct Job {
    GenerationRequest request;
    Sink sink;
  };
  /// Queues all of `jobs` or none: fails when they do not fit in the queue.
  llvm::Error submit(std::vector<Job> jobs);

  /// Sequences waiting and in flight (for tests and logs).
  int64_t queued();
  int64_t active();

private:
  void run();

  Engine engine_;
  ErrorReport reportError_;
  int64_t maxQueue_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  int64_t active_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

} // namespace strata::generate
