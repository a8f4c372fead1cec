//===- TrainingRun.h - A whole training job: data, loop, logs, checkpoints
//-===//
//
// What `strata train` runs: tokenizes the data (cached), builds the model's
// programs, trains for the configured steps with a progress line (loss,
// tokens/s, ETA), evaluates the validation loss every K steps, appends
// metrics as JSON lines to OUT/metrics.jsonl, and saves OUT/checkpoint.bin
// atomically at each evaluation, every --save-every steps, on SIGINT/SIGTERM
// and at the end (runtime/train/RunDirectory.h says what OUT holds). A resumed
// run restores parameters, AdamW moments, the step and the data position, and
// continues with bitwise the same losses as an uninterrupted run: data batches
// and dropout masks are counter-based functions of (seed, step), not RNG state.
//
// With tp*dp > 1 the run is parallel (runtime/parallel/TrainingSession.h) on
// in-process CPU devices, or, when WORLD_SIZE is set, on one device per
// process of a torchrun-style job, where rank 0 reports and writes the files
// and every rank computes; checkpoints hold logical tensors either way.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "proto/model_spec.pb.h"
#include "runtime/parallel/Backend.h"
#include "runtime/parallel/ParallelConfig.h"
#include "runtime/train/RunDirectory.h"
#include "runtime/train/TrainOptions.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <memory>
#include <string>

namespace strata {

struct RunOptions {
  pb::ModelSpec spec;   // checked; training/data sections filled in
  std::string dataPath; // text file (with dataBlend: the blend, for messages)
  std::string
      dataBlend; // Megatron --data-path "0.7 P1 0.3 P2" (TrainingData.h)
  std::string split = "969,30,1"; // Megatron --split of the blend's datasets
  std::string outDir;             // metrics, checkpoint, token cache
  bool resume = false;            // continue from OUT/checkpoint.bin
  /// Start from this checkpoint's parameters (e.g. `strata import-hf`'s):
  /// fresh optimizer state, step 0. Empty: the spec's initializer.
  std::string initFrom;
  bool overwrite = false;   // replace a previous run in OUT
  int64_t saveEvery = 0;    // steps between checkpoints (0: at evaluations)
  int64_t evalIters = 20;   // validation batches per evaluation
  int64_t sampleTokens = 0; // characters of sample text printed at the end
  bool progressBar = true;  // \r-updated line (else one line per log step)
  int64_t logEvery = 10;    // steps between progress lines without a bar
  ParallelConfig parallel;  // tp x dp CPU devices (1 x 1: serial)
  bool fusion = false;      // fused kernels (TrainOptions::fusion)
  GradReduceOptions gradReduce; // TrainOptions::gradReduce
  Backend device =
      Backend::Cpu; // what the devices are (runtime/parallel/Backend.h)
  /// Where notes on the run's inputs go (the driver's `strata train: note:`);
  /// null: the output stream, prefixed `note: `.
  std::function<void(const llvm::Twine &)> note;
  std::string tracePath; // Chrome trace of the first traceSteps steps
  int64_t traceSteps = 3;
  // A plan file's compiled programs for `parallel`, run instead of compiling
  // the spec (runtime/parallel/TrainingSession.h); null: compile.
  std::shared_ptr<const CompiledPipeline> programs;
};

/// The optimizer, schedule and seed of a spec's training section.
TrainOptions trainOptions(const pb::Training &training);

/// Runs the job; progress and results go to `os`. A run stopped by SIGINT
/// or SIGTERM saves its state and fails with TrainingInterrupted
/// (runtime/train/StopSignals.h); a diverged one (non-finite loss or
/// gradient norm) fails naming the step and keeps the last checkpoint.
llvm::Error runTraining(const RunOptions &options, llvm::raw_ostream &os);

} // namespace strata
