//===- PlanSearch.h - Candidate layouts and their closed-form bounds ------===//
//
// `strata plan` searches tp (inside a node), pp, dp, sp, micro batch,
// schedule (1F1B, interleaved V), recompute (none, full, auto: the fewest
// blocks that fit; selective is none in strata, passes/recompute) and
// ZeRO-1 for a model on N devices at a global batch. Compiling and
// simulating a candidate costs about a second for GPT-3 175B, so the search
// first drops candidates that cannot run (indivisible: tp must divide the
// heads and the node, pp the layers, dp x micro batch the global batch,
// interleaved V the blocks per stage and microbatches a multiple of pp) and
// ranks the rest by a closed form built from the same op and collective
// models as the simulator (perf/OpTime.h, perf/Collectives.h):
//
//   stage time per microbatch  F + B (+ recomputed forward) of L/pp blocks:
//                              the block's GEMMs and attention at their
//                              per-device shapes, its memory-bound work, its
//                              4 tp all-reduces (or all-gather +
//                              reduce-scatter with sp); the LM head on the
//                              last stage
//   auto recompute             none and full mixed by the share of blocks
//                              that brings the memory to the capacity
//   step                       (m + (pp-1)/V) x stage time + dp gradient
//                              all-reduce (reduce-scatter + all-gather with
//                              ZeRO-1) + the optimizer's memory passes
//   memory                     16 bytes per local parameter (fp32 weight,
//                              gradient, two moments; moments / dp with
//                              ZeRO-1) + activations per block and
//                              microbatch (Korthikanti et al. 2022's
//                              34 s b h, split by tp where it is, in fp32;
//                              the block's input only with full
//                              recomputation) times the microbatches in
//                              flight on stage 0 (pp for 1F1B; interleaved
//                              adds (pp-1)/V)
//
// The closed form only orders and prunes: the finalists are compiled and
// simulated (estimatePlan), and their memory is the memory planner's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "passes/pipeline/ParallelCompile.h"
#include "perf/Hardware.h"

#include <map>
#include <string>
#include <vector>

namespace strata {

struct PlanCandidate {
  int64_t tp = 1, pp = 1, dp = 1;
  bool sp = false;
  int64_t microBatch = 1;   // sequences per dp rank and microbatch
  int64_t microbatches = 1; // per optimizer step
  ScheduleSpec schedule;
  RecomputeMode recompute = RecomputeMode::None;
  bool zero1 = false;
  /// The closed form's step seconds and bytes on the fullest device.
  double boundTime = 0;
  double boundMemory = 0;

  /// "tp 8 pp 12 dp 16 sp mb 1 m 96 interleaved:2 recompute full zero1".
  std::string str() const;
  /// The compiler's options for it (optimizer from the spec's training;
  /// `capacity`: the device's bytes, auto recomputation's budget).
  ParallelCompileOptions compileOptions(const OptimizerConfig &opt,
                                        int64_t capacity) const;
};

struct PlanSearchOptions {
  int64_t devices = 1, globalBatch = 1;
  Precision precision = Precision::F32;
  /// Interleaved schedules tried: V in 2..maxVirtual.
  int64_t maxVirtual = 4;
};

/// Why candidates were dropped, with one example of each.
struct DropCounts {
  std::map<std::string, int64_t> count;
  std::map<std::string, std::string> example;
  void add(const std::string &reason, const std::string &what);
};

/// Every runnable candidate with its closed-form time and memory, sorted by
/// time; those indivisible or over the memory capacity are counted in
/// `dropped` ("indivisible", "out of memory").
std::vector<PlanCandidate> enumerateCandidates(const ModelConfig &c,
                                               const pb::Hardware &hw,
                                               const PlanSearchOptions &o,
                                               DropCounts &dropped);

/// The closed-form step time and memory of `p` (the file comment).
void boundCandidate(const ModelConfig &c, const pb::Hardware &hw,
                    Precision precision, PlanCandidate &p);

} // namespace strata
