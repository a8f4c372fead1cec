//===- PipelinePlan.h - Stage programs of a pipelined training step
//--------===//
//
// The pipeline pass cuts the microbatch graph (forward + backward, usually
// partitioned by spmd and with recomputation chosen) into S = P * V virtual
// stages, contiguous in model order: stage 0 holds the embedding, stage S-1
// the final norm, the LM head and the loss, and each stage a run of blocks.
// Virtual stage j runs on pipeline rank j % P as its chunk j / P (V = 1
// unless the schedule is interleaved).
//
// Each stage becomes two programs, valid graphs on their own:
//
//   F (forward)   inputs: the parameters and data (tokens, labels) its nodes
//                 read. Starts with a `recv` per boundary value from stage
//                 j-1, ends with a `send` per value stage j+1 needs. Outputs:
//                 the loss (last stage only), then the stash: the forward
//                 values B reads, named as in the microbatch graph.
//   B (backward)  inputs: parameters and data it reads, then the stash (same
//                 names, bound to F's outputs of the same microbatch). Starts
//                 with `recv`s of gradients from stage j+1, ends with `send`s
//                 to stage j-1. Outputs: `grad.<p>` for every parameter the
//                 stage holds (the microbatch's contribution; the runtime sums
//                 them over the microbatches of a step).
//
// Values cross stages only between neighbours (a value needed further away
// is relayed). Messages: `send(%v) {axes=["pp"], peer=R, tag=T}` and
// `%v = recv() {axes=["pp"], dtype, peer=R, shape, tag=T}`: the peer is the
// pipeline rank, i.e. the rank in the group over `pp` (same dp and tp
// coordinates), and a send matches the recv with the same tag in the same
// microbatch. With sequence parallelism the boundary values are the
// sequence-split residual stream (their sharding is kept).
//
// The optimizer program of rank r updates the parameters it owns: the
// spmd-partitioned AdamW graph (passes/optimizer/OptimizerGraph.h) of those
// parameters, with the gradient norm's sum of squares all-reduced over `pp`
// before the square root, so clipping uses the global norm.
//
// Tied parameters (GPT's wte: read by the embedding on the first stage and
// by the LM head on the last) are held by several ranks. Each rank's B
// outputs its own partial gradient; the owner (the lowest rank holding it)
// receives the others' accumulated gradients at the start of its optimizer
// program and adds them (the sum Megatron-LM all-reduces over its embedding
// group), updates the parameter and sends the new value back; the other
// holders send their gradient and receive the new value, keeping no
// optimizer state for it. Both copies must start equal (same init).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/pipeline/Bindings.h"
#include "passes/pipeline/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace strata {

/// One virtual stage: where it runs, what it holds, its two programs.
struct PipelineStage {
  int64_t index = 0; // virtual stage j, model order
  int64_t rank = 0;  // pipeline rank j % P
  int64_t chunk = 0; // j / P
  int64_t firstLayer = 0;
  int64_t numLayers = 0;
  bool embedding = false; // holds the embedding (stage 0)
  bool head = false;      // holds the final norm, LM head and loss
  Graph forward;
  Graph backward;
  /// F's outputs after the loss, which B takes as inputs by these names.
  std::vector<std::string> stash;
  /// What each input and output of F and B is (Bindings.h).
  ProgramBindings forwardBindings, backwardBindings;
  /// FLOPs of one microbatch (CostModel.h).
  double forwardFlops = 0, backwardFlops = 0;
};

/// A parameter held by several pipeline ranks (see the file comment).
struct TiedParam {
  std::string name;
  std::vector<int64_t> ranks; // ascending; ranks[0] owns the update
};

struct PipelinePlan {
  int64_t pp = 1;
  std::vector<PipelineStage> stages;              // P * V, in model order
  std::vector<Graph> optimizers;                  // one per pipeline rank
  std::vector<ProgramBindings> optimizerBindings; // one per pipeline rank
  std::vector<TiedParam> tied;
  Schedule schedule;
  /// How the layers were balanced over the stages (PipelineCut.h), one line
  /// per stage plus notes; printed by `strata compile` and kept in the plan.
  std::string balanceReport;
};

/// Prints every program as IR text, separated by `# ---- stage J F` /
/// `# ---- stage J B` (with `(rank R, chunk C)` when interleaved) and
/// `# ---- rank R optimizer` lines.
void printPipelinePlan(llvm::raw_ostream &os, const PipelinePlan &plan);

/// Checks the plan is executable: every program passes the verifier, every
/// send has exactly one recv with the same tag on its peer, in the program
/// of the same kind on the neighbouring stage (optimizer programs among
/// themselves), with the same type (shape, dtype); every stash name is an F
/// output and a B input of the same type; the schedule is valid.
llvm::Error verifyPipelinePlan(const PipelinePlan &plan);

} // namespace strata
