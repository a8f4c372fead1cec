//===- Recompute.h - Activation recomputation
//------------------------------===//
//
// recompute{mode=none|selective|full|auto, layers=0+1+..., budget=BYTES,
//           regather=0|1}
//
// Chooses which forward values a microbatch keeps for its backward pass (the
// stash, passes/memory/Activations.h) and which the backward recomputes. It
// runs on the microbatch graph after autodiff and after spmd (before the
// pipeline cut): on the partitioned graph the stash is in per-device bytes,
// so `budget` means what a device holds, and the collectives of a block are
// recomputed with it, as Megatron-LM does.
//
// IR markers. `recompute=true` on a forward node means "the backward does
// not keep what this node produced; it recomputes it". The recomputation
// itself is a clone of the forward node in the backward region, named
// `<value>.recompute`, marked `bwd=true, recompute=true`, and inserted just
// before the first backward node that reads it; those backward nodes read
// the clone instead of the forward value.
//
// Modes:
//   none       nothing but the re-gather below.
//   selective  Korthikanti et al. 2022: recompute the attention core (the
//              softmax and its dropout), which holds 5as^2b bytes per layer in
//              Megatron's unfused layers for a small share of the FLOPs. In
//              strata the core is one `attention` op whose gradient
//              recomputes the probabilities from q, k and v (its stored
//              inputs, as Megatron's checkpointed core stores them), so no
//              clone is needed: selective marks each forward `attention`
//              `recompute=true`, which the memory accounting reads (the
//              Megatron model then counts no 5as^2b; Activations.h).
//   full       recompute every block (or those of `layers`) from its input:
//              the block's forward nodes that its backward needs are cloned
//              before the block's backward, so the stash keeps only the
//              block input (2sbh in fp16). The block's other forward nodes
//              whose results no backward node reads (the last dropout) are
//              marked as well: like Megatron-LM's checkpointed layer, the
//              backward keeps nothing of them. Forward nodes of the
//              embedding and of the head are never recomputed.
//   auto       full recomputation of the cheapest set of blocks (fewest added
//              FLOPs per stashed byte saved) that brings the stash of one
//              microbatch down to `budget` bytes; an error says by how much
//              the budget is missed if recomputing every block is not enough.
//
// regather (default 1): with sequence parallelism, a block's matmuls read the
// all_gather of a sequence-split norm output, and their weight gradients read
// it again. Megatron-LM does not keep the gathered tensor; it keeps the
// split one and gathers again in the backward (Korthikanti et al. §4.2.2).
// regather clones every forward all_gather that the backward reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <optional>

namespace strata {

/// The marker attribute (see the file comment).
inline constexpr llvm::StringLiteral kRecomputeAttr = "recompute";

/// Whether `n` carries `recompute=true`.
inline bool isRecomputed(const Node &n) {
  return n.attrs.getBool(kRecomputeAttr);
}

enum class RecomputeMode { None, Selective, Full, Auto };

/// "none", "selective", "full", "auto".
std::optional<RecomputeMode> parseRecomputeMode(llvm::StringRef name);
llvm::StringRef recomputeModeName(RecomputeMode m);

struct RecomputeOptions {
  RecomputeMode mode = RecomputeMode::None;
  /// Full: the blocks to recompute; empty means all of them.
  llvm::SmallVector<int64_t, 8> layers;
  /// Auto: the most bytes one microbatch may stash (per device).
  int64_t budget = -1;
  bool regather = true;
};

/// What recomputing one block in full costs and saves.
struct LayerRecomputeCost {
  int64_t layer = 0;
  double flops = 0;       // forward FLOPs added to the backward
  int64_t savedBytes = 0; // stash bytes no longer kept (net)
};

/// The cost and saving of recomputing each block of `g` in full, in layer
/// order (blocks already recomputed are skipped).
std::vector<LayerRecomputeCost> layerRecomputeCosts(const Graph &g);

/// The cheapest blocks among `candidates` (fewest FLOPs per byte saved first)
/// that together save at least `bytes`, sorted. Fails, saying how much is
/// missing, if all of them save less.
llvm::Expected<llvm::SmallVector<int64_t, 8>>
chooseRecomputeLayers(llvm::ArrayRef<LayerRecomputeCost> costs,
                      llvm::ArrayRef<int64_t> candidates, int64_t bytes);

/// Applies `options` to `g` (see the file comment). Errors leave `g`
/// unchanged: no backward nodes, markers already present, unknown layers,
/// auto without a budget or with one that cannot be met.
llvm::Error recompute(Graph &g, const RecomputeOptions &options);

std::unique_ptr<Pass> createRecomputePass(RecomputeOptions options);

/// Parses a byte count: digits with an optional K/M/G/T suffix, decimal
/// (`KB`, `MB`, `GB`, `TB`) or binary (`KiB`, `MiB`, `GiB`, `TiB`).
std::optional<int64_t> parseBytes(llvm::StringRef text);

/// Bytes in binary units, as every byte count strata prints: 1536 ->
/// "1.50 KiB", 16e9 -> "14.90 GiB", 100 -> "100 B".
std::string formatBytes(int64_t bytes);

} // namespace strata
