//===- Heartbeat.h - A rank's sign of life for `strata launch`
//-------------===//
//
// `strata launch` gives each rank the write end of a pipe in
// STRATA_HEARTBEAT_FD. A strata process that finds it writes one byte a
// second from a thread of its own, so the launcher sees a rank that stopped
// (SIGSTOP, a frozen machine) even while its peers wait for it inside a
// collective, and ends the job naming that rank. A rank that never beats (a
// command other than strata) is not watched.
// The ranks also watch each other through the rendezvous store
// (runtime/comm/Heartbeat.h), which covers ranks torchrun or srun started;
// this file installs the driver's handler for what that watchdog finds.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>

namespace strata {

/// The environment variable naming the heartbeat pipe's file descriptor.
constexpr const char *kHeartbeatFdVar = "STRATA_HEARTBEAT_FD";
/// How often a rank beats.
constexpr std::chrono::seconds kHeartbeatInterval{1};

/// Starts the heartbeat thread when STRATA_HEARTBEAT_FD names a descriptor,
/// and installs the stall handler of the store watchdog.
void startHeartbeatFromEnvironment();

} // namespace strata
