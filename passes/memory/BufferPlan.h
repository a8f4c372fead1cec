//===- BufferPlan.h - Liveness and buffer offsets of one program
//-----------===//
//
// Every node result of a program gets an offset in one arena. A result is
// live from the node that defines it to the last node that reads it
// (inclusive, so a result never shares memory with an operand of its own
// node); graph outputs stay live to the end. Intervals are packed first-fit,
// largest first, each buffer aligned to 64 bytes: the planner the CPU
// Executable runs from (runtime/Executable.h): the plan carries the offsets
// and the runtime allocates from it.
//
// A reshape is a view: its result aliases its operand's storage (`root`),
// is never launched, and keeps that storage live as long as any alias is.
//
// Outputs may instead live outside the arena (`outputsInArena = false`):
// a forward program's outputs are its stash, which lives in per-microbatch
// stash slots, and an optimizer program writes its parameters and moments
// back in place.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace strata {

struct BufferPlanOptions {
  bool outputsInArena = true;
  int64_t alignment = 64;
};

struct BufferPlan {
  /// Per value (by ValueId: inputs, then node results in order): its offset
  /// in the arena, or -1 for inputs and outputs kept outside it.
  std::vector<int64_t> offsets;
  /// Per value: the value whose storage it uses (itself, or for a reshape
  /// the root of its operand).
  std::vector<ValueId> root;
  int64_t arenaBytes = 0;
  /// The most bytes (aligned) live at once: a lower bound on arenaBytes.
  int64_t peakLiveBytes = 0;
};

/// Plans the arena of `g` (see the file comment).
BufferPlan planBuffers(const Graph &g, const BufferPlanOptions &options = {});

/// Whether `plan` can run `g` (a stored plan is read back unchecked): one
/// offset and root per value, each offset inside the arena, each root an
/// earlier value of the same bytes that is its own root.
llvm::Error verifyBufferPlan(const Graph &g, const BufferPlan &plan);

} // namespace strata
