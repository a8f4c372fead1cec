//===- ParallelInterpreter.h - Runs one partitioned graph on every rank ---===//
//
// The SPMD executor: the same per-device graph (local types, collectives) is
// bound to every local rank's device by its own Interpreter and run on all
// ranks at once, each launch carrying the rank's mesh coordinates and
// communicators, so rank-dependent kernels (shard_slice, vocab-parallel
// gather, dropout by global index) and collectives find their place.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/Interpreter.h"
#include "runtime/parallel/DeviceGroup.h"

#include <memory>
#include <vector>

namespace strata {

class ParallelInterpreter {
public:
  /// `g` must be partitioned over the group's mesh (or have no mesh and run
  /// on a group of one device). The graph must outlive the interpreter.
  static llvm::Expected<std::unique_ptr<ParallelInterpreter>>
  create(const Graph &g, DeviceGroup &group);

  const Graph &graph() const { return g_; }

  /// Runs every local rank: inputs[local][i] is the device buffer of graph
  /// input i on local rank `local`; outputs[local] receives that rank's
  /// output buffers, valid until the next run. `base` gives seed and step.
  llvm::Error run(llvm::ArrayRef<std::vector<const void *>> inputs,
                  std::vector<std::vector<void *>> &outputs,
                  const LaunchContext &base = {});

  /// Logical tensors in (graph input order; each rank gets its block by the
  /// input's sharding) and logical tensors out (every rank's block put back
  /// together by the output's sharding). Needs host-memory devices.
  llvm::Expected<std::vector<HostTensor>>
  runLogical(llvm::ArrayRef<HostTensor> inputs, const LaunchContext &base = {});

private:
  ParallelInterpreter(const Graph &g, DeviceGroup &group)
      : g_(g), group_(group) {}

  const Graph &g_;
  DeviceGroup &group_;
  std::vector<std::unique_ptr<Interpreter>> interps_; // by local rank
};

/// A value's sharding in `g` (replicated when it has none).
Sharding shardingOf(const Graph &g, ValueId v);

} // namespace strata
