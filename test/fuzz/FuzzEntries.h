//===- FuzzEntries.h - One input through a reader, as the CLI reads it ----===//
//
// The entry points shared by the libFuzzer targets (test/fuzz/*Fuzzer.cpp,
// clang, STRATA_FUZZ=ON, scripts/fuzz.sh) and fuzz_regression_test (the
// default suite), which feeds every input of test/fuzz/regressions/<target>/
// through the same entry. Each returns the reader's error (success when the
// input is accepted); a broken invariant that no input may cause (the
// printed IR does not parse back, a checked spec builds an invalid graph)
// aborts with a message, which libFuzzer reports as a finding.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace strata::fuzz {

/// IR text: parse, verify; an accepted graph must print, parse back and
/// print the same text.
llvm::Error irText(llvm::StringRef bytes);

/// A model spec (.textproto): parse and check; a checked spec of a few
/// layers is compiled into a plan as `strata compile` does (graph build,
/// verifier, parameter count), then read back through the plan reader.
llvm::Error modelSpec(llvm::StringRef bytes);

/// A plan file: what `strata train PLAN` reads before it runs: the header,
/// payload and spec checks and the logical graph (loadPlanOrSpec), then the
/// stored programs and schedule (loadPipeline) and kernels (checkKernels).
llvm::Error planFile(llvm::StringRef bytes);

/// A checkpoint file (loadCheckpoint).
llvm::Error checkpointFile(llvm::StringRef bytes);

/// A tensor archive: index.json, a NUL byte, then data.bin
/// (TensorArchive::read).
llvm::Error tensorArchive(llvm::StringRef bytes);

/// A strata-opt run: the first line is a pass pipeline (`spmd{tp=2}`), the
/// rest IR text; runs the pipeline with the verifier after every pass, as
/// strata-opt does. Pipelines with more than 8 passes are refused.
llvm::Error passPipeline(llvm::StringRef bytes);

/// Writes `bytes` to the file `name` of a per-process scratch directory
/// ($TMPDIR; removed at exit) and returns its path, for readers that take
/// a path.
std::string writeScratchFile(llvm::StringRef name, llvm::StringRef bytes);

/// An entry point, by the name of its fuzz target / regression folder:
/// ir, model_spec, plan, checkpoint, tensor_archive, pass_pipeline.
using Entry = llvm::Error (*)(llvm::StringRef);
Entry entryFor(llvm::StringRef target);
/// Every target name entryFor knows.
llvm::ArrayRef<llvm::StringRef> targetNames();

} // namespace strata::fuzz
