//===- PlanExecutor.h - Runs a program from its memory plan ---------------===//
//
// The runtime half of passes/memory's buffer plans (BufferPlan.h): every
// node result the plan places in the arena lives at its offset in a
// workspace the caller passes to each run (one per device, shared by the
// programs that run on it one at a time), and each output the plan keeps
// outside the arena is written straight into a buffer the caller binds:
// a forward program's outputs into the microbatch's stash slots, an
// optimizer program's new parameters and moments into the state they
// replace. So a pipelined step allocates what the memory plan counts.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/memory/BufferPlan.h"
#include "runtime/Device.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace strata {

class PlanExecutor {
public:
  /// Fails if `device` lacks a kernel for some node. `g` must outlive the
  /// executor; `plan` is planBuffers(g, ...).
  static llvm::Expected<std::unique_ptr<PlanExecutor>>
  create(const Graph &g, BufferPlan plan, Device &device);

  const Graph &graph() const { return g_; }
  /// Bytes the workspace of a run must have.
  int64_t arenaBytes() const { return plan_.arenaBytes; }

  /// Runs the program and synchronizes. `inputs[i]` is graph input i;
  /// `bound[o]` is where output o goes (null: its place in the arena, or
  /// the input it is). An output the plan keeps outside the arena must be
  /// bound. `outputs` receives each output's buffer, valid until the next
  /// run on the same workspace.
  llvm::Error run(llvm::ArrayRef<const void *> inputs,
                  llvm::ArrayRef<void *> bound, void *workspace,
                  std::vector<void *> &outputs, const LaunchContext &ctx);

private:
  PlanExecutor(const Graph &g, BufferPlan plan, Device &d)
      : g_(g), plan_(std::move(plan)), dev_(d) {}
  const Graph &g_;
  BufferPlan plan_;
  Device &dev_;
};

} // namespace strata
