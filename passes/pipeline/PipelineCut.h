//===- PipelineCut.h - Balancing blocks over pipeline stages
//---------------===//
//
// Stage j of S holds a contiguous run of at least one block; stage 0 also
// holds the embedding, stage S-1 the final norm, the LM head and the loss.
// The cut minimizes the most FLOPs any stage runs per microbatch (forward +
// backward + recomputation, CostModel.h), then, among the cuts reaching that,
// the most memory any stage needs: its parameters with their gradients and
// AdamW moments, plus its stash per microbatch times the microbatches its
// rank keeps in flight under the schedule. So a large LM head (GPT-2's 50k
// vocabulary costs about five blocks) leaves the last stage fewer blocks,
// and with 1F1B an uneven block lands where fewer microbatches are in flight.
// Layer counts that do not divide evenly are never dropped: the report says
// which stage got how many and why.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

/// Per-microbatch costs of the model units of a microbatch graph.
struct UnitCosts {
  struct Cost {
    double flops = 0;
    int64_t paramBytes = 0; // parameters first read by the unit
    int64_t stashBytes = 0; // Activations.h, strata model
  };
  Cost pre, post;
  std::vector<Cost> layers;
};

/// Measures the units of `micro` (ModelUnits.h); nodes of unknown scope are
/// not counted.
UnitCosts measureUnits(const Graph &micro);

struct StageCut {
  std::vector<int64_t> firstLayer, numLayers; // per virtual stage
  std::vector<double> flops;                  // per virtual stage
  /// Human-readable: one line per stage and a note on how it was balanced.
  std::string report;
};

/// Cuts `costs.layers` into `inFlight.size()` stages (`inFlight[j]`: the
/// microbatches stage j keeps in flight). `given`, if not empty, is the
/// user's layers per stage, which must have one positive entry per stage
/// and sum to the block count. `pp` only labels stages with their rank.
llvm::Expected<StageCut> cutStages(const UnitCosts &costs,
                                   llvm::ArrayRef<int64_t> inFlight,
                                   llvm::ArrayRef<int64_t> given, int64_t pp);

} // namespace strata
