//===- Schedule.h - Pipeline schedules: per-rank instruction streams
//-------===//
//
// A schedule says, for each pipeline rank, in which order it runs the forward
// (F) and backward (B) program of each microbatch on each of its model
// chunks, then the optimizer step (Narayanan et al. 2021, Megatron-LM):
//
//   gpipe          F 0..M-1, then B 0..M-1; M microbatches in flight.
//   1f1b           PipeDream-Flush: P-r-1 warm-up forwards on rank r, then
//                  one F and one B alternating, then the cool-down backwards;
//                  at most P-r microbatches in flight on rank r.
//   interleaved:V  each rank holds V chunks (virtual stage j = c*P + r is
//                  chunk c of rank r, model order); Megatron-LM's interleaved
//                  1F1B over groups of P microbatches. Needs M % P == 0.
//
// Communication is inside the programs (stage programs end with `send`s and
// start with `recv`s of boundary values, PipelinePlan.h): F of microbatch k
// on virtual stage j receives from F k on stage j-1 and sends to F k on
// stage j+1; B goes the other way. The semantics the runtime implements and
// validation assumes: a send is eager (posted, never waits for the peer),
// a recv blocks until the matching send was posted. The optimizer step
// starts with a collective over all pipeline ranks (the global gradient
// norm), so it is a barrier.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved };

/// A schedule kind plus its virtual stages per rank (V; 1 unless
/// interleaved), parsed from "gpipe", "1f1b" or "interleaved:V".
struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  int64_t virtualStages = 1;
  /// "gpipe", "1f1b", "interleaved:V".
  std::string str() const;
};
llvm::Expected<ScheduleSpec> parseScheduleSpec(llvm::StringRef text);

/// One step of a rank's stream.
struct Instr {
  enum Kind : uint8_t { Forward, Backward, Optimizer };
  Kind kind = Forward;
  int32_t microbatch = -1; // -1 for the optimizer
  int32_t chunk = 0;       // the rank's model chunk (virtual stage c*P + r)
  bool operator==(const Instr &o) const {
    return kind == o.kind && microbatch == o.microbatch && chunk == o.chunk;
  }
  /// "F3", "B0.c1", "OPT".
  std::string str() const;
};

struct Schedule {
  ScheduleSpec spec;
  int64_t pp = 1;
  int64_t microbatches = 1;
  /// ranks[r]: rank r's instructions, ending with one Optimizer.
  std::vector<std::vector<Instr>> ranks;

  int64_t numStages() const { return pp * spec.virtualStages; }
  /// Virtual stage of chunk `c` on rank `r`.
  int64_t stageOf(int64_t r, int64_t c) const { return c * pp + r; }
};

/// Builds the schedule. Errors say what would fit: pp, microbatches and V
/// must be >= 1; interleaved needs pp >= 2, V >= 2 and M a multiple of pp.
llvm::Expected<Schedule> buildSchedule(const ScheduleSpec &spec, int64_t pp,
                                       int64_t microbatches);

/// The bubble fraction of the papers: (p-1)/m, or (p-1)/(v*m) interleaved.
double idealBubbleFraction(const Schedule &s);

/// Checks that every rank runs F and B of each (microbatch, chunk) exactly
/// once, F before B, then the optimizer last, and that the streams cannot
/// deadlock under the communication semantics above (by simulation). Errors
/// name the rank and instruction.
llvm::Error validateSchedule(const Schedule &s);

/// Most microbatches whose F ran and B has not, per rank and chunk
/// ([rank][chunk]): the stash slots a chunk needs.
std::vector<std::vector<int64_t>> maxInFlight(const Schedule &s);

/// When each instruction runs, from durations per instruction.
struct Timeline {
  struct Slot {
    Instr instr;
    double start = 0, end = 0;
  };
  std::vector<std::vector<Slot>> ranks;
  /// End of the last backward on any rank (the optimizer excluded).
  double pipelineEnd = 0;
  /// Busy time of a rank's F and B (the same on every rank).
  double busyPerRank = 0;
  /// (pipelineEnd - busy) / busy: the measured bubble fraction.
  double bubbleFraction() const;
};

/// Simulates `s` (validated) with `duration(rank, instr)`; each instruction
/// starts when its rank is free and its message has arrived (transfers take
/// no time); the optimizer starts on every rank at once.
Timeline
simulate(const Schedule &s,
         const std::function<double(int64_t, const Instr &)> &duration);

/// The papers' unit costs: F takes 1/V, B 2/V, the optimizer 1/2.
double unitDuration(const Schedule &s, const Instr &i);

} // namespace strata
