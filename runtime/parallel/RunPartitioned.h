//===- RunPartitioned.h - One partitioned graph on every rank, logically --===//
//
// For verification and tests: the same per-device graph (local types,
// collectives) bound to every local rank's device as an Executable and run
// on all ranks at once, each launch carrying the rank's mesh coordinates and
// communicators. Inputs are logical tensors (each rank gets its block by
// the input's sharding); outputs are put back together from every rank's
// block (through the world group when ranks live in other processes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/parallel/DeviceGroup.h"

#include <vector>

namespace strata {

/// `g` must be partitioned over the group's mesh (or have no mesh and run
/// on a group of one device). Needs host-memory devices.
llvm::Expected<std::vector<HostTensor>>
runPartitioned(const Graph &g, DeviceGroup &group,
               llvm::ArrayRef<HostTensor> inputs,
               const LaunchContext &base = {});

} // namespace strata
