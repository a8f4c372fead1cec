//===- BatchFlags.h - --micro-batch and --global-batch --------------------===//
//
// Megatron-LM's batch flags, shared by compile, estimate, train and verify.
// --micro-batch is the sequences of one microbatch on one data-parallel rank
// (the spec's micro_batch); --global-batch is the sequences of one optimizer
// step over the whole mesh, micro_batch x dp x microbatches, and sets the
// microbatches (the spec's training.grad_accum). A global batch that the
// other sizes do not give is an error that says which values would fit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/model_spec.pb.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace strata {

struct BatchFlags {
  explicit BatchFlags(llvm::cl::SubCommand &cmd);

  /// Checks the flags and writes them into `spec`: micro_batch, and the
  /// training.grad_accum that --global-batch implies over `dp` ranks.
  /// `microbatches` is the verb's own microbatch count when given; it must
  /// agree with --global-batch.
  llvm::Error apply(pb::ModelSpec &spec, int64_t dp,
                    std::optional<int64_t> microbatches) const;
  /// The first of the two flags given on the command line, or null.
  const llvm::cl::Option *firstGiven() const;

  llvm::cl::opt<int64_t> microBatch, globalBatch;
};

} // namespace strata
