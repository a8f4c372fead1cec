//===- BatchFlags.cpp - --micro-batch and --global-batch ------------------===//
#include "tools/strata/BatchFlags.h"

#include "tools/strata/Flags.h"
#include "tools/strata/Verb.h"

using namespace llvm;

namespace strata {

BatchFlags::BatchFlags(cl::SubCommand &cmd)
    : microBatch("micro-batch",
                 cl::desc("Sequences per microbatch on each data-parallel "
                          "rank (default: the spec's micro_batch)"),
                 cl::sub(cmd), cl::cat(strataCategory())),
      globalBatch("global-batch",
                  cl::desc("Sequences per optimizer step over all "
                           "data-parallel ranks: micro batch x dp x "
                           "microbatches; sets the microbatches"),
                  cl::sub(cmd), cl::cat(strataCategory())) {}

const cl::Option *BatchFlags::firstGiven() const {
  if (given(microBatch))
    return &microBatch;
  return given(globalBatch) ? &globalBatch : nullptr;
}

Error BatchFlags::apply(pb::ModelSpec &spec, int64_t dp,
                        std::optional<int64_t> microbatches) const {
  if (Error e = checkFlags({
          atLeast(microBatch, 1,
                  "sequences per microbatch and data-parallel rank; leave "
                  "the flag out for the spec's micro_batch"),
          atLeast(globalBatch, 1,
                  "sequences per optimizer step over all data-parallel "
                  "ranks"),
      }))
    return e;
  if (given(microBatch))
    spec.set_micro_batch(microBatch);
  if (!given(globalBatch))
    return Error::success();
  int64_t perMicrobatch = spec.micro_batch() * dp;
  std::string sizes =
      ("micro batch " + Twine(spec.micro_batch()) + " x dp " + Twine(dp)).str();
  if (globalBatch % perMicrobatch != 0) {
    int64_t below = globalBatch / perMicrobatch * perMicrobatch;
    std::string fits = below > 0 ? std::to_string(below) + " or " : "";
    return usageError("--global-batch " + Twine(int64_t(globalBatch)) +
                      " is not a multiple of " + sizes + " = " +
                      Twine(perMicrobatch) +
                      " (global batch = micro batch x dp x microbatches; " +
                      fits + Twine(below + perMicrobatch) + " would fit)");
  }
  int64_t implied = globalBatch / perMicrobatch;
  if (microbatches && *microbatches != implied)
    return usageError("--global-batch " + Twine(int64_t(globalBatch)) +
                      " needs " + Twine(implied) + " microbatches of " + sizes +
                      ", but --microbatches is " + Twine(*microbatches) +
                      " (drop one of the two, or use --global-batch " +
                      Twine(perMicrobatch * *microbatches) + ")");
  spec.mutable_training()->set_grad_accum(implied);
  return Error::success();
}

} // namespace strata
