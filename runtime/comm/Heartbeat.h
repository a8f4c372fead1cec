//===- Heartbeat.h - Ranks without a launcher watch each other ------------===//
//
// `strata launch` watches its ranks through a pipe (tools/strata/Heartbeat.h).
// Ranks started by torchrun, srun or a script have no such parent, so they
// watch each other through the job's rendezvous store (rank 0's TCP store):
//   - every rank sets `strata/heartbeat/<rank>` to a growing count each
//     interval, on a store connection of its own;
//   - rank r watches rank (r + 1) % world: a count that stops changing for
//     the timeout names that rank, is posted under `strata/heartbeat/stalled`
//     and ends this process;
//   - every rank reads that key each interval and ends too, naming the same
//     rank;
//   - a store that does not answer for the timeout names rank 0 (its host).
// A rank that finishes posts `done` and is no longer watched; a lost store
// connection (rank 0 exited) ends the watching quietly, the collectives then
// report it. The timeout is STRATA_HEARTBEAT_TIMEOUT seconds (default 60, as
// `strata launch --heartbeat-timeout`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/Error.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace strata {

/// The environment variable holding the stall timeout in seconds.
constexpr const char *kHeartbeatTimeoutVar = "STRATA_HEARTBEAT_TIMEOUT";
/// Seconds of silence after which a rank counts as stopped, here and in
/// `strata launch --heartbeat-timeout`.
constexpr int kDefaultHeartbeatTimeoutSeconds = 60;

/// How a store heartbeat beats and when it gives up on a peer.
struct StoreHeartbeatOptions {
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds timeout =
      std::chrono::seconds(kDefaultHeartbeatTimeoutSeconds);
  /// The defaults with STRATA_HEARTBEAT_TIMEOUT applied (an error names a
  /// value that is not a number of seconds in (0, 86400]).
  static llvm::Expected<StoreHeartbeatOptions> fromEnvironment();
};

/// Called once, from a watchdog thread, with the message naming the stalled
/// rank. The default prints `error: <message>` and ends the process (exit 1).
using StallHandler = std::function<void(const std::string &message)>;

/// Replaces the process's stall handler (the strata driver formats the
/// message as its other errors).
void setStallHandler(StallHandler handler);

/// Calls the process's stall handler with `message`: how any watchdog of a
/// rank (this one's, the NCCL one's) reports a failed or stuck peer, so the
/// message gets the driver's `strata <verb>: error:` form.
void reportStall(const std::string &message);

/// This rank's beat and watchdog, running while the object lives.
class StoreHeartbeat {
public:
  /// Connects to the store at host:port (it must be served already) and
  /// starts beating as `rank` of `world`.
  static llvm::Expected<std::unique_ptr<StoreHeartbeat>>
  start(const std::string &host, int port, int64_t rank, int64_t world,
        const StoreHeartbeatOptions &options);
  /// Posts `done` for this rank and stops watching.
  ~StoreHeartbeat();

  struct State;

private:
  explicit StoreHeartbeat(std::shared_ptr<State> state)
      : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

} // namespace strata
