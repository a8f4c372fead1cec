//===- Interpreter.h - Runs one graph on one device, node by node ----------===//
//
// An Interpreter binds a graph to a device: it checks the device supports every
// node, plans one arena for all intermediate values (liveness intervals packed
// first-fit, largest first), and then runs the graph any number of times.
// Reshapes are views: their results alias their operands' storage.
// Graph inputs are caller-owned device buffers; outputs are returned as device
// pointers valid until the next run (an output that is a graph input points at
// that input).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/Device.h"
#include "runtime/HostTensor.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace strata {

class Interpreter {
public:
  /// Fails if `device` lacks a kernel for some node.
  static llvm::Expected<std::unique_ptr<Interpreter>> create(const Graph &g,
                                                             Device &device);
  ~Interpreter();

  const Graph &graph() const { return g_; }
  Device &device() const { return dev_; }
  /// Bytes of the intermediate-value arena.
  int64_t arenaBytes() const { return arenaBytes_; }

  /// Enqueues one run and synchronizes. `inputs[i]` is a device buffer for
  /// graph input i; `outputs` receives one device pointer per graph output.
  llvm::Error run(llvm::ArrayRef<const void *> inputs,
                  std::vector<void *> &outputs, const LaunchContext &ctx = {});

  /// Convenience for tests and tools: host tensors in (graph input order),
  /// host tensors out. Input types must match the graph's.
  llvm::Expected<std::vector<HostTensor>>
  runHost(llvm::ArrayRef<HostTensor> inputs, const LaunchContext &ctx = {});

private:
  Interpreter(const Graph &g, Device &device) : g_(g), dev_(device) {}
  void planArena();

  const Graph &g_;
  Device &dev_;
  std::vector<int64_t> offset_;  // per value: arena offset, -1 if not in arena
  std::vector<ValueId> root_;    // per value: the value whose storage it uses
  int64_t arenaBytes_ = 0;
  void *arena_ = nullptr;
};

} // namespace strata
