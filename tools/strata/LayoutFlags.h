//===- LayoutFlags.h - The layout flags of the verbs that compile a spec --===//
//
// `strata compile` and `strata estimate` take the same flags for how a spec
// is laid out over devices (--tp --dp --pp --sp --microbatches --schedule
// --recompute --memory-budget --layers-per-stage --saved-state
// --distributed-optimizer --no-fusion). Each verb holds one LayoutFlags on
// its subcommand; compileOptions() checks the flags and turns them into the
// compiler's options for a spec.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "proto/model_spec.pb.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata {

struct LayoutFlags {
  explicit LayoutFlags(llvm::cl::SubCommand &cmd);

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
};

} // namespace strata
