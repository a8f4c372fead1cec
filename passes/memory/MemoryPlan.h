//===- MemoryPlan.h - Peak bytes per device of a pipelined plan
//------------===//
//
// For every pipeline rank (each of its dp x tp devices holds the same
// amounts), what is allocated while it runs its instruction stream:
//
//   parameters       the rank's parameter shards (a tied parameter on every
//                    rank holding it)
//   gradients        one accumulation buffer per parameter, in its dtype
//   optimizer state  AdamW's m and v in fp32 for the parameters the rank
//                    owns (a tied parameter's other holders keep none)
//   master params    an fp32 copy of each owned parameter that is not fp32;
//                    0 for fp32 models
//
// Mixed precision (passes/precision) keeps parameters in fp32 and casts a
// 16-bit copy where a program reads one. Under the Strata model that is
// what is counted: fp32 parameters (the masters), fp32 gradients, fp32
// moments, 16 bytes per parameter, the copies in the programs' workspaces.
// Under the Megatron model the parameters are Megatron's persistent 16-bit
// copies and the masters are counted apart, as report_theoretical_memory
// does: 2 + 4 (fp32 main_grad) + 4 + 8 = 18 bytes per parameter, or
// 6 + 12/dp with the distributed optimizer.
//   stash            the stash slots in use: a forward program's outputs
//                    (Activations.h; per the saved-state model) from the
//                    start of F of a microbatch to the end of its B
//   workspace        the arena of the program running (BufferPlan.h): F
//                    without its outputs (they are the stash), B with its
//                    per-microbatch gradients, the optimizer without its
//                    outputs (written in place)
//
// The peak is the largest static + stash + workspace over the instructions
// of the rank's stream, so it depends on the schedule: under 1F1B rank r
// holds at most P - r stashes, under GPipe all M.
//
// Checked against Korthikanti et al. 2022, Table 2 (test/passes/pipeline):
// with the Megatron saved-state model, a GPT layer in fp16 stashes
// sbh(34 + 5as/h) bytes without parallelism, sbh(10 + 24/t + 5as/ht) with
// tensor parallelism, sbh(34/t + 5as/ht) with sequence parallelism too,
// without the 5as term under selective recomputation, and 2sbh under full
// recomputation.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/memory/Activations.h"
#include "passes/memory/BufferPlan.h"
#include "passes/pipeline/PipelinePlan.h"

#include <string>
#include <vector>

namespace strata {

/// One pipeline rank's bytes per device.
struct RankMemory {
  int64_t rank = 0;
  int64_t parameters = 0, gradients = 0, optimizerState = 0, masterParams = 0;
  /// Stash and workspace at the peak.
  int64_t stash = 0, workspace = 0;
  int64_t peak = 0;
  /// The instruction at the peak ("B3.c1", "OPT").
  std::string peakAt;
  /// Per chunk: stash bytes of one microbatch, and the most microbatches in
  /// flight under the schedule.
  std::vector<int64_t> stashPerMicrobatch, inFlight;
  /// The most stash bytes held at once.
  int64_t maxStash = 0;

  int64_t staticBytes() const {
    return parameters + gradients + optimizerState + masterParams;
  }
};

struct MemoryPlan {
  SavedStateModel model = SavedStateModel::Strata;
  /// Per virtual stage and per rank: the programs' arenas.
  std::vector<BufferPlan> forward, backward, optimizer;
  std::vector<RankMemory> ranks;
};

/// Plans every program's buffers and computes each rank's peak.
MemoryPlan planMemory(const PipelinePlan &plan,
                      SavedStateModel model = SavedStateModel::Strata);

/// The dtype `param` is read in by `g`: that of its narrowing casts
/// (mixed precision), else its own; `users` is g.users().
DType computeCopyDType(const Graph &g,
                       llvm::ArrayRef<llvm::SmallVector<int32_t, 2>> users,
                       ValueId param);

/// Stash bytes of one microbatch of a forward program: its outputs after
/// the loss (`hasLoss`) plus its nodes' internal saved state.
int64_t forwardStashBytes(const Graph &forward, bool hasLoss,
                          SavedStateModel model);

} // namespace strata
