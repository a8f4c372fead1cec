//===- Simulator.h - Event-driven simulation of a plan's rank streams -----===//
//
// Each pipeline rank runs its schedule's instruction stream (Schedule.h):
// for each instruction a program, for each program a list of SimOps with
// predicted durations. All dp x tp devices of a pipeline rank run the same
// programs on the same shapes at the same time, so one device stands for
// them: a collective within the rank's dp / tp groups is a duration on its
// stream, and only what crosses pipeline ranks needs events:
//
//   Send     eager (the runtime's semantics): posted at the sender's clock,
//            arrives `seconds` later; the sender goes on at once.
//   Recv     waits for the matching send (same sender, receiver, tag and
//            microbatch) to arrive; of the wait, up to the message's
//            transfer time is exposed pp communication, the rest is idle
//            (the pipeline bubble).
//   Barrier  a collective over pp (the optimizer's global gradient norm):
//            the k-th barrier of every rank starts when the last rank
//            reaches it and takes `seconds`.
//   Async    work on the rank's second stream (the dp gradient reduction's
//            and ZeRO-1's parameter gathers, perf/GradBuckets.h): it starts
//            when both the rank's clock and that stream's previous work are
//            there, and the rank goes on at once. In a B program it runs
//            only in the last microbatch of that chunk (the runtime issues a
//            bucket then), in an F program only in the first (the gathers
//            are issued as the step's first forward starts).
//   Join     the rank waits for its second stream, or with `tag` k >= 0 for
//            the step's k-th Async op only (a gather bucket its next node
//            reads); the wait is exposed (its phase, comm_dp). In F and B
//            programs it runs where their Async ops do.
//
// Ranks advance in turns until each is blocked or done; a round with no
// progress and unfinished ranks is a deadlock, reported with each rank's
// blocked instruction. The cost is linear in the number of ops.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/Schedule.h"

#include "llvm/Support/Error.h"

#include <array>
#include <string>
#include <vector>

namespace strata {

/// Where a span of a rank's time goes (the estimate's breakdown).
enum class Phase : uint8_t {
  Compute,   // F and B ops, recomputation excluded
  Recompute, // forward ops cloned into B (recompute=true, bwd=true)
  Optimizer, // the optimizer program's own ops
  CommTp,    // collectives over tp
  CommDp,    // collectives over dp (dp and tp together included)
  CommPp,    // pp collectives and the transfer part of recv waits
  Idle,      // waiting for another rank: the bubble
};
inline constexpr size_t kNumPhases = 7;
/// "compute", "recompute", "optimizer", "comm_tp", "comm_dp", "comm_pp",
/// "bubble".
const char *phaseName(Phase p);

struct SimOp {
  enum Kind : uint8_t { Work, Send, Recv, Barrier, Async, Join };
  Kind kind = Work;
  Phase phase = Phase::Compute;
  /// Work, Barrier and Async: duration; Send: the message's transfer time.
  double seconds = 0;
  /// Send / Recv: the peer's pipeline rank and the message tag; Join: the
  /// Async op waited for (-1: all).
  int64_t peer = -1, tag = -1;
  /// Index into SimProgram::labels of a traced op (a collective or
  /// message), or -1.
  int32_t label = -1;
  int64_t bytes = -1;
};

struct SimProgram {
  std::vector<SimOp> ops;
  std::vector<std::string> labels;
};

/// What to simulate: the schedule and the programs of each instruction.
struct SimPlan {
  Schedule schedule;
  std::vector<SimProgram> forward, backward; // per virtual stage
  std::vector<SimProgram> optimizer;         // per pipeline rank
};

/// A span of the timeline, for the trace.
struct SimEvent {
  int64_t rank = 0; // pipeline rank
  /// "F3", "optimizer" / "program"; "all_reduce tp", "send peer 1" /
  /// "collective" (a send from its post to its arrival).
  std::string name, category;
  /// 0: the rank's stream; 1: its second stream (Async work).
  int stream = 0;
  double start = 0, end = 0;
  int64_t bytes = -1;
};

struct RankTime {
  std::array<double, kNumPhases> phase{};
  /// End of the rank's stream, and of its last F / B.
  double end = 0, pipelineEnd = 0;
  /// Time in F and B (compute, recompute and their collectives).
  double busy = 0;
};

struct SimResult {
  double stepTime = 0;
  std::vector<RankTime> ranks;
  std::vector<SimEvent> events; // when asked for
  /// (latest pipelineEnd - busy) / busy of the busiest rank: the measured
  /// bubble fraction, as Timeline::bubbleFraction (Schedule.h).
  double bubbleFraction() const;
};

/// Simulates `plan` (a validated schedule, programs for every stage and
/// rank). Each rank's idle time is what remains of the step time after its
/// phases, so every rank's phases sum to the step time.
llvm::Expected<SimResult> simulatePlan(const SimPlan &plan, bool recordEvents);

} // namespace strata
