//===- Flags.h - Checking the verbs' command-line flags -------------------===//
//
// Every numeric or keyword flag of every verb is checked by one rule from
// here, so each bad value gets the same kind of message: the flag, the
// constraint, the value given and what to do instead:
//
//   --steps must be >= 1, got -1 (optimizer steps to train; leave the flag
//   out for the spec's training.steps)
//
// A rule applies only when the flag was given on the command line: an
// absent flag keeps its default, which satisfies it (verbs tell "given"
// from "absent" with given(), never with a sentinel value such as -1).
// checkPipelineFlags holds the pipeline checks compile, train and verify
// share.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace strata {

/// True if `flag` was given on the command line.
inline bool given(const llvm::cl::Option &flag) {
  return flag.getNumOccurrences() > 0;
}

/// A real number as messages show it (%g): 0.001, 1e-05, inf.
std::string formatNumber(double v);

/// One constraint on one flag.
struct FlagRule {
  const llvm::cl::Option *flag;
  /// The constraint and the value given ("must be >= 1, got -1"), or empty
  /// when the value satisfies it.
  std::function<std::string()> violation;
  /// What the flag is for and how to fix it (may be empty).
  std::string hint;
};

/// The integer flag must lie in [min, max].
FlagRule inRange(const llvm::cl::opt<int64_t> &flag, int64_t min, int64_t max,
                 llvm::StringRef hint = "");
FlagRule inRange(const llvm::cl::opt<int> &flag, int min, int max,
                 llvm::StringRef hint = "");
/// The integer flag must be >= min.
FlagRule atLeast(const llvm::cl::opt<int64_t> &flag, int64_t min,
                 llvm::StringRef hint = "");
FlagRule atLeast(const llvm::cl::opt<int> &flag, int min,
                 llvm::StringRef hint = "");

/// Which ends of a real interval belong to it.
enum class Ends { Closed, OpenLow, OpenHigh, Open };

/// The real flag must be finite and lie in the interval from lo to hi
/// (either may be infinite: an unbounded side).
FlagRule inInterval(const llvm::cl::opt<double> &flag, double lo, double hi,
                    Ends ends, llvm::StringRef hint = "");

/// The keyword flag must be one of `values`.
FlagRule oneOf(const llvm::cl::opt<std::string> &flag,
               llvm::ArrayRef<llvm::StringRef> values,
               llvm::StringRef hint = "");

/// The first violated rule as `--flag must ..., got V (hint)`, or success.
llvm::Error checkFlags(llvm::ArrayRef<FlagRule> rules);

/// Sequence parallelism splits over the tensor-parallel group: --sp needs
/// tp >= 2 (as `strata compile` requires), rather than being ignored.
llvm::Error checkSequenceParallel(bool sp, int64_t tp);

/// Checks a pipeline layout the way Megatron-LM does: the schedule must be
/// buildable for pp stages and `microbatches` per step (interleaved needs a
/// multiple of pp), and every stage needs a block. With fewer microbatches
/// than stages, a note names the bubble: each rank idles
/// (pp-1)/(V*microbatches) of the step's compute.
llvm::Error checkPipelineFlags(const ScheduleSpec &schedule, int64_t pp,
                               int64_t microbatches, int64_t layers);

} // namespace strata
