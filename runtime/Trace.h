//===- Trace.h - A step timeline in Chrome's trace format -----------------===//
//
// What `strata train --trace FILE.json` writes: complete events ("ph": "X")
// with one process row per rank and one thread row per stream of it, so
// chrome://tracing and Perfetto show each program run (the trainer records
// them), each collective and send/recv, and each copy (the device records
// them from its stream, with their bytes). Times are microseconds since the
// trace began. Recording is thread-safe; devices call it from their streams.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/JSON.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strata {

class Trace {
public:
  struct Event {
    int64_t rank = 0;
    std::string stream;   // "compute", "host"
    std::string name;     // "F 3.0", "all_reduce dp", "copy to host"
    std::string category; // "program", "collective", "copy"
    int64_t beginUs = 0, durationUs = 0;
    int64_t bytes = -1; // moved or reduced, when known
  };

  Trace() : start_(std::chrono::steady_clock::now()) {}
  /// Microseconds since the trace began.
  int64_t nowUs() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now() - start_)
        .count();
  }
  void add(Event e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
  }
  /// The Chrome trace: {"traceEvents": [...], "displayTimeUnit": "ms"},
  /// with process and thread names.
  llvm::json::Value toJson() const;

private:
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

/// Records [begin, now) as an event of `trace` on scope exit (no-op when
/// `trace` is null).
class TraceScope {
public:
  TraceScope(Trace *trace, int64_t rank, std::string stream, std::string name,
             std::string category, int64_t bytes = -1)
      : trace_(trace) {
    if (!trace_)
      return;
    e_ = {rank,
          std::move(stream),
          std::move(name),
          std::move(category),
          trace_->nowUs(),
          0,
          bytes};
  }
  ~TraceScope() {
    if (!trace_)
      return;
    e_.durationUs = trace_->nowUs() - e_.beginUs;
    trace_->add(std::move(e_));
  }
  TraceScope(const TraceScope &) = delete;
  TraceScope &operator=(const TraceScope &) = delete;

private:
  Trace *trace_;
  Trace::Event e_;
};

} // namespace strata
