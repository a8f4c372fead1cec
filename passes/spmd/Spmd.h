//===- Spmd.h - Tensor, sequence and data parallelism by SPMD partitioning
//-===//
//
// Two passes, run after autodiff on the microbatch graph:
//
//   megatron-seeds{tp=T,dp=D,sp=0|1}  sets `mesh<dp=D,tp=T>` and seeds the
//       input shardings with Megatron-LM's rules (by the parameter names of
//       docs/models.md), after checking that the model divides (heads, KV
//       heads, ffn, padded vocab by tp; batch by dp; sequence by tp with sp).
//       With sp=1 it also annotates the input and output of every norm as
//       split along the sequence over tp.
//   spmd{keep_partial=dp}  propagates shardings over the whole graph and
//       lowers it to per-device (local) types with collectives; see
//       passes/spmd/Partitioner.h. Outputs stay partial sums only over the
//       axes of keep_partial (`dp`, `dp+tp` or `none`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"
#include "passes/spmd/Partitioner.h"

#include <memory>

namespace strata {

/// Options of megatron-seeds.
struct MegatronSeedOptions {
  int64_t tp = 1;
  int64_t dp = 1;
  bool sp = false;
};

/// Sets the mesh and seeds shardings (see the file comment). Errors name the
/// violated constraint and how to fix it; `g` is unchanged on error.
llvm::Error seedMegatron(Graph &g, const MegatronSeedOptions &options);

std::unique_ptr<Pass> createMegatronSeedsPass(MegatronSeedOptions options);
std::unique_ptr<Pass> createSpmdPass(spmd::PartitionOptions options = {});

} // namespace strata
