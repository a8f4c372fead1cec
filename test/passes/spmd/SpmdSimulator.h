//===- SpmdSimulator.h - Runs a partitioned graph on every rank in lockstep
//-===//
//
// A test oracle for the spmd pass, independent of the multi-device runtime:
// every rank of the mesh runs the partitioned graph node by node with the CPU
// kernels, and collectives are computed across the ranks straight from their
// definitions (ir/Ops.def). Inputs are cut from logical tensors by their
// shardings; outputs are put back together (split dims concatenated, partial
// sums added). A graph that is not partitioned runs once, serially.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/HostTensor.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace strata::spmdtest {

/// The shard index of `rank` over `axes` (major to minor).
int64_t shardIndex(const Mesh &mesh, int64_t rank,
                   llvm::ArrayRef<std::string> axes);

/// Rank `rank`'s block of the logical tensor `global` under `s`.
HostTensor shardOf(const HostTensor &global, const Sharding &s,
                   const Mesh &mesh, int64_t rank);

/// Runs `g` on logical inputs (graph input order) and returns the logical
/// outputs. `seed` keys dropout.
llvm::Expected<std::vector<HostTensor>>
simulate(const Graph &g, llvm::ArrayRef<HostTensor> inputs, uint64_t seed);

} // namespace strata::spmdtest
