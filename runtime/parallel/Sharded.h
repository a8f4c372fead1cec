//===- Sharded.h - Logical tensors <-> per-rank shards --------------------===//
//
// How a logical (serial) tensor is laid out over a mesh by a Sharding: rank r
// holds the block at its shard index along every split dim, and a value that
// is partial over some axes is the sum of the blocks of the ranks along them.
// shardOf cuts a rank's block (for parameters, data and checkpoints);
// gatherFull puts every rank's block back together (for verification,
// checkpoints and logging).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/Sharding.h"
#include "runtime/HostTensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace strata {

/// The per-rank type of a logical `type` under `s`, or an error when a split
/// dim does not divide.
llvm::Expected<TensorType> localType(const TensorType &type, const Sharding &s,
                                     const Mesh &mesh);

/// Rank `rank`'s block of `full`. A value partial over some axes is placed
/// whole on the ranks at coordinate 0 along them and is zero elsewhere, so
/// the blocks sum to `full`.
llvm::Expected<HostTensor> shardOf(const HostTensor &full, const Sharding &s,
                                   const Mesh &mesh, int64_t rank);

/// Rank `rank`'s block of the logical tensor of `type` whose element i
/// (row-major) is element(i), drawn without building the whole tensor (a
/// rank initialises only its shards). Partial sums as in shardOf.
llvm::Expected<HostTensor> blockOf(const TensorType &type, const Sharding &s,
                                   const Mesh &mesh, int64_t rank,
                                   llvm::function_ref<double(int64_t)> element);

/// A value's sharding in `g` (replicated when it has none).
Sharding shardingOf(const Graph &g, ValueId v);

/// The logical tensor from every rank's block (`blocks[r]` for global rank
/// r, all of one type): split dims concatenated, partial sums added in rank
/// order (in double), replicated copies read from coordinate 0.
llvm::Expected<HostTensor> gatherFull(llvm::ArrayRef<HostTensor> blocks,
                                      const Sharding &s, const Mesh &mesh);

} // namespace strata
