//===- Executable.h - One program bound to one device
//----------------------===//
//
// An Executable is a program whose kernels a device has resolved and
// prepared once (Device::prepare, whose KernelModule it keeps), run from its
// buffer plan (passes/memory/BufferPlan.h): every node result the plan places
// in the arena lives at its offset in a workspace, reshapes are views of their
// operands (never launched), and each output the plan keeps outside the
// arena is written straight into a buffer the caller binds (a forward
// program's stash slots, an optimizer program's state). The workspace is
// either the caller's (the programs of a training rank share one) or the
// executable's own.
//
// enqueue() puts the program's launches on the device's stream and returns
// without waiting; run() also synchronizes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/memory/BufferPlan.h"
#include "runtime/Device.h"
#include "runtime/HostTensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace strata {

class Executable {
public:
  /// Runs `g` from `plan` (planBuffers(g, ...), or a plan file's) in a
  /// workspace each call passes. Fails if `device` lacks a kernel for some
  /// node or the plan is not g's. `g` must outlive the executable.
  static llvm::Expected<std::unique_ptr<Executable>>
  create(const Graph &g, BufferPlan plan, Device &device);
  /// Runs `g` from planBuffers(g) in a workspace of its own.
  static llvm::Expected<std::unique_ptr<Executable>> create(const Graph &g,
                                                            Device &device);
  ~Executable();

  const Graph &graph() const { return g_; }
  Device &device() const { return dev_; }
  /// Bytes the workspace of a run must have.
  int64_t arenaBytes() const { return plan_.arenaBytes; }

  /// Enqueues one run without synchronizing. `inputs[i]` is graph input i;
  /// `bound[o]` is where output o goes (null or empty: its place in the
  /// arena, or the input it is); an output the plan keeps outside the arena
  /// must be bound. `workspace` null: the executable's own. `outputs`
  /// receives each output's buffer, valid once the stream reaches it and
  /// until the next run on the same workspace. `afterNode(i)`, if given, is
  /// called once node i's launch is enqueued (reshapes included), and with
  /// i = the node count after the copies into bound outputs: work enqueued
  /// then on ctx.stream, or after an event recorded there, sees node i done
  /// (the trainer issues gradient reductions there, GradReducer.h).
  llvm::Error enqueue(llvm::ArrayRef<const void *> inputs,
                      llvm::ArrayRef<void *> bound, void *workspace,
                      std::vector<void *> &outputs, const LaunchContext &ctx,
                      llvm::function_ref<void(size_t)> afterNode = {});
  /// enqueue, then waits for the device.
  llvm::Error run(llvm::ArrayRef<const void *> inputs,
                  llvm::ArrayRef<void *> bound, void *workspace,
                  std::vector<void *> &outputs, const LaunchContext &ctx);
  /// Runs in the own workspace with nothing bound.
  llvm::Error run(llvm::ArrayRef<const void *> inputs,
                  std::vector<void *> &outputs, const LaunchContext &ctx = {});

  /// For tests and tools: host tensors in (graph input order, types must
  /// match), host tensors out.
  llvm::Expected<std::vector<HostTensor>>
  runHost(llvm::ArrayRef<HostTensor> inputs, const LaunchContext &ctx = {});

private:
  Executable(const Graph &g, BufferPlan plan, Device &d,
             std::unique_ptr<KernelModule> module)
      : g_(g), plan_(std::move(plan)), dev_(d), module_(std::move(module)) {}

  const Graph &g_;
  BufferPlan plan_;
  Device &dev_;
  std::unique_ptr<KernelModule> module_; // Device::prepare's, for g_
  void *ownWorkspace_ = nullptr;
};

} // namespace strata
