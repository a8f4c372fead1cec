//===- MemoryCheck.h - Does a training run fit in this machine's memory?
//---===//
//
// Before a run allocates anything, its host memory need is compared with what
// the machine has, so a model that cannot fit fails with the numbers instead
// of dying in an allocation minutes later. The need counted is a lower bound
// that every layout pays: f32 parameters, gradients and both AdamW moments
// (replicated over dp, moments sharded with the distributed optimizer), and
// one microbatch's stash of activations (passes/memory/Activations.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/parallel/ParallelConfig.h"

#include "llvm/Support/Error.h"

#include <cstdint>

namespace strata {

/// What a run needs on this machine, in bytes.
struct HostMemoryNeed {
  int64_t params = 0;     ///< parameter count of the model
  int64_t stateBytes = 0; ///< parameters, gradients, AdamW moments
  int64_t stashBytes = 0; ///< activations one microbatch keeps for backward
  int64_t total() const { return stateBytes + stashBytes; }
};

/// The need of training `forward` with layout `parallel`, for the share
/// `localRanks / worldSize` of its ranks that run on this machine.
HostMemoryNeed hostMemoryNeed(const Graph &forward,
                              const ParallelConfig &parallel,
                              int64_t localRanks, int64_t worldSize);

/// Bytes this process can still allocate: /proc/meminfo's MemAvailable,
/// capped by the cgroup's memory.max; -1 when neither can be read.
int64_t availableHostMemory();

/// Fails, with the need, what is available and how to fit, when `need`
/// exceeds `available` (-1: unknown, never fails).
llvm::Error checkHostMemory(const HostMemoryNeed &need, int64_t available);

} // namespace strata
