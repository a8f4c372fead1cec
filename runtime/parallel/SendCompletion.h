//===- SendCompletion.h - When an eager send has surely been received -----===//
//
// Sends are eager (passes/pipeline/Schedule.h): the communicator keeps a
// copy of each message until it is waited for. Waiting too early could
// deadlock; waiting at the step's end holds every message of the step. This
// finds, from the schedule alone, the earliest point at which each send has
// certainly been received: vector clocks over the ranks' streams, where F k
// on stage j receives from F k on stage j-1 and B k on stage j from B k on
// stage j+1, and a rank that received a message from instruction z of rank
// q knows q ran everything up to z (a program's recvs come before its
// sends). A send to q's instruction z is received once the sender knows q
// reached z; waiting for it then returns at once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/Schedule.h"

#include <vector>

namespace strata {

/// completed[r][i]: the instructions of rank r (indices into streams[r])
/// whose sends have all been received once rank r finished streams[r][i].
/// `streams` are the schedule's streams without the optimizer (F and B
/// only), in the schedule's order.
std::vector<std::vector<std::vector<int32_t>>>
completedSends(const Schedule &s,
               const std::vector<std::vector<Instr>> &streams);

} // namespace strata
