//===- NcclWatchdog.h - Finds failed or stuck NCCL work -------------------===//
//
// A background thread of one rank that polls each of its NCCL
// communicators' asynchronous error (ncclCommGetAsyncError) and the calls in
// flight: a call counts from the moment its communication stream reaches it
// (a host callback marks it) until it finished, and one that takes longer
// than the timeout counts as failed (a peer stopped or hung). On a failure
// it aborts every communicator of the rank (ncclCommAbort: their peers then
// fail too, instead of waiting) and reports a message naming the
// collective, the group and the peers; the default report prints it and
// exits the process, so every rank of a job ends.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/nccl/Nccl.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace strata::cuda {

class NcclWatchdog {
public:
  using OnFailure = std::function<void(const std::string &message)>;
  /// Watches for rank `rank` with the per-call `timeout`; `onFailure` runs
  /// once, on the watchdog's thread, after the communicators are aborted
  /// (default: runtime/comm's reportStall, which prints
  /// `strata <verb>: error: rank <r>: ...` and exits with code 1).
  NcclWatchdog(Nccl &nccl, int64_t rank, std::chrono::milliseconds timeout,
               OnFailure onFailure = nullptr);

  /// Also polls `reason` (the job's abort flag, runtime/comm): once it is
  /// non-empty another part of this rank already failed and reports why, so
  /// the communicators are aborted (work blocked in them fails instead of
  /// waiting) without calling onFailure.
  void abortWhen(std::function<std::string()> reason);
  ~NcclWatchdog();

  /// The per-call timeout: $STRATA_NCCL_TIMEOUT seconds, else 60 on a GPU
  /// and 600 in interpret mode (whose kernels run on the host, so a peer
  /// may compute for minutes before it reaches a collective).
  static std::chrono::milliseconds defaultTimeout(bool interpret);

  /// Polls `comm`'s asynchronous error from now on.
  void watch(NcclComm comm, const std::string &group);
  /// A call issued on `comm`: `what` over `group` with `peers`. Returns its
  /// id for started() and finished(), called when the stream reaches it and
  /// when it is done.
  uint64_t issued(NcclComm comm, std::string what, std::string group,
                  std::string peers);
  void started(uint64_t id);
  void finished(uint64_t id);
  /// Stops the thread (the destructor does too).
  void stop();
  /// Whether the communicators were aborted (they must not be destroyed).
  bool aborted() const { return aborted_; }

private:
  struct Call {
    NcclComm comm;
    std::string what, group, peers;
    std::optional<std::chrono::steady_clock::time_point> start;
  };
  void loop();
  void fail(const std::string &message);

  Nccl &nccl_;
  int64_t rank_;
  std::chrono::milliseconds timeout_;
  OnFailure onFailure_;
  std::function<std::string()> abortReason_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> aborted_{false};
  std::vector<std::pair<NcclComm, std::string>> comms_;
  std::map<uint64_t, Call> calls_;
  uint64_t next_ = 0;
  std::thread thread_;
};

} // namespace strata::cuda
