//===- CollectiveReport.h - Every collective of a training step
//------------===//
//
// What `strata inspect PLAN --collectives` prints: each communication node of
// the step's programs (all_reduce, all_gather, reduce_scatter, all_to_all,
// broadcast_from, send, recv) with how often it runs per optimizer step, its
// group, its payload and the provenance the inserting pass recorded
// ({reason, src}, ir/Ops.def), and totals per group.
//
// Sizes are per device. `bytes` is the buffer a call moves: the full
// (gathered / unreduced) tensor of an all_reduce, all_gather, reduce_scatter
// or all_to_all, the message of a send/recv. `sentBytes` is what each device
// puts on the wire for it under the ring algorithms NCCL and Gloo use
// (n = group size): all_reduce 2(n-1)/n * bytes, all_gather, reduce_scatter
// and all_to_all (n-1)/n * bytes, broadcast bytes at most, send bytes, recv 0.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace strata {

/// One collective node of one program.
struct CollectiveUse {
  std::string program; // e.g. "stage 0 F"
  int64_t runsPerStep; // times the program runs per optimizer step
  std::string op;      // "all_reduce", "send", ...
  std::string reduce;  // all_reduce's "sum" / "max", else empty
  std::string group;   // "tp", "dp,tp", "pp peer 1"
  int64_t groupSize;   // devices in the group (2 for send/recv)
  int64_t bytes;       // per call, see the file comment
  int64_t sentBytes;   // per call and device
  std::string src;     // scope whose value it moves (may be empty)
  std::string reason;  // why it is there (may be empty)
  std::string value;   // the result (or operand, for send) it produces
};

/// Totals over a step for one group (`group` without the peer for send/recv).
struct CollectiveTotal {
  std::string group;
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t sentBytes = 0;
};

/// Appends the collectives of `program` (a partitioned graph) to `out`.
void listCollectives(const Graph &program, llvm::StringRef label,
                     int64_t runsPerStep, std::vector<CollectiveUse> &out);

/// Per-step totals by group, in order of first appearance.
std::vector<CollectiveTotal>
totalCollectives(const std::vector<CollectiveUse> &uses);

} // namespace strata
