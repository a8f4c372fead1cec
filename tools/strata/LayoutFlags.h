//===- LayoutFlags.h - The layout flags of the verbs that compile a spec --===//
//
// `strata compile` and `strata estimate` take the same flags for how a spec
// is laid out over devices (--tp --dp --pp --sp --microbatches --schedule
// --recompute --memory-budget --layers-per-stage --saved-state
// --distributed-optimizer --no-fusion, and BatchFlags' --micro-batch and
// --global-batch). Each verb holds one LayoutFlags on its subcommand;
// applyBatch() writes the batch flags into the spec, compileOptions() checks
// the other flags and turns them into the compiler's options for a spec.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "proto/model_spec.pb.h"
#include "tools/strata/BatchFlags.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

struct LayoutFlags {
  explicit LayoutFlags(llvm::cl::SubCommand &cmd);

  /// Writes --micro-batch and --global-batch into `spec` (BatchFlags::apply
  /// over --dp ranks, with --microbatches when given).
  llvm::Error applyBatch(pb::ModelSpec &spec) const;
  /// The compile options the flags give `spec` (its training section for
  /// the microbatches and optimizer when the flags leave them out), or the
  /// first flag that is wrong, as a usage error.
  llvm::Expected<ParallelCompileOptions>
  compileOptions(const pb::ModelSpec &spec) const;
  /// The first of the flags given on the command line, or null.
  const llvm::cl::Option *firstGiven() const;

  llvm::cl::opt<int64_t> tp, dp, pp;
  llvm::cl::opt<bool> sp;
  llvm::cl::opt<int64_t> microbatches;
  llvm::cl::opt<std::string> schedule, recomputeMode, memoryBudget;
  llvm::cl::list<int64_t> layersPerStage;
  llvm::cl::opt<std::string> savedState;
  llvm::cl::opt<bool> distributedOptimizer, noFusion;
  BatchFlags batch;
};

} // namespace strata
