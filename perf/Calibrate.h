//===- Calibrate.h - Measure this machine as a pb::Hardware ---------------===//
//
// `strata calibrate` describes the machine it runs on by microbenchmarks of
// the CPU backend's own code paths, so `strata estimate --cluster FILE`
// predicts the CPU backend from measurements, not guesses:
//
//   GEMMs       kernels::matmul (the matmul op's kernel) over a table of
//               (m, n, k) shapes and the three transposes training uses
//               (NN forward, TN weight gradient, NT input gradient)
//   attention   kernels::attentionFwd / attentionBwd, causal, over a table
//               of (seq, head_dim)
//   bandwidth   an add node run by an Executable on a CpuDevice (the
//               trainer's path) over working sets from a few KB to beyond
//               the last-level cache: seconds per byte moved by size
//   launch      the same with 1-element tensors: the per-node cost of the
//               executor and the device's stream
//   op table    every memory-bound node of a reference GPT block and a
//               Llama block (gpt_tiny's sizes; Llama's rms norm, rope and
//               silu; unfused and fused as `strata train` runs them) run
//               alone by an Executable: seconds per element by op or fused
//               body (a fused GEMM: its epilogue), since on a CPU a layer
//               norm or gelu computes for longer than its bytes take to move
//   collectives all_reduce over Gloo between ranks that are threads of this
//               process (the trainer's communicators), fitted to
//               latency + bytes / bandwidth (ring, 2 ranks: 2 steps)
//
// GEMMs and attention on devices of one kernel thread are timed in the
// thread's CPU time (timeCalls), so a machine shared with other work
// still measures the kernel; everything else in wall time.
//
// A CPU "device" is a rank with `threadsPerDevice` kernel threads; the node
// holds cores / threadsPerDevice of them, and every kernel measurement runs
// on all of them at once, as a multi-device layout does, so shared caches
// and memory bandwidth are contended as in training.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "proto/hardware.pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace strata {

struct CalibrateOptions {
  std::string name = "cpu";
  /// Kernel threads per device; 0: every core (one device per machine).
  int threadsPerDevice = 0;
  /// A smaller table and shorter timings (under ~20 s on 2 cores).
  bool quick = false;
};

/// Measures this machine's CPU backend (see the file comment). Progress
/// lines go to `log`.
llvm::Expected<pb::Hardware> calibrateCpu(const CalibrateOptions &options,
                                          llvm::raw_ostream &log);

/// Runs fn(device) on `devices` threads at once, each with its own kernel
/// thread team, and returns the mean of their results.
double concurrently(int devices, const std::function<double(int)> &fn);

/// Seconds per call of fn: after one warm-up call, `reps` calls in a few
/// batches, the fastest batch's mean (interference only adds time).
/// `threadCpu`: the calling thread's CPU time instead of wall time, for a
/// kernel that runs on that thread alone (one kernel thread per device):
/// the same on an idle machine, without the time other processes held the
/// core on a busy one.
double timeCalls(int64_t reps, const std::function<void()> &fn,
                 bool threadCpu = false);

/// Calls fn needs to fill about `budget` seconds (at least 2).
int64_t repsFor(double budget, const std::function<void()> &fn);

/// What a calibration measures and for how long.
struct CalibrationGrid {
  std::vector<int64_t> rows, cols;               // GEMM m; n and k
  std::vector<std::pair<int64_t, int64_t>> attn; // (seq, head_dim)
  int64_t attnElements;                          // of q, over batch x heads
  std::vector<int64_t> bandwidthBytes;           // working sets
  double budget;                                 // seconds per sample
  double maxGemmFlops;                           // larger shapes skipped
};

/// Times the GEMMs of `grid` with `seconds` (one call of the shape, its
/// m, n, k and transposes set) and adds them to a's table as `half`
/// samples: the three transposes of training (NN forward, TN weight
/// gradient, NT input gradient), every (m, n, k) under the FLOP cap.
/// Returns the best rate (FLOP/s), or the first error.
llvm::Expected<double> measureGemms(
    const CalibrationGrid &grid, bool half, pb::Accelerator &a,
    llvm::function_ref<llvm::Expected<double>(const pb::GemmSample &)> seconds);

/// Wall seconds since `start`.
double secondsSince(std::chrono::steady_clock::time_point start);

/// `count` chained adds of `elements` f32 values: the bandwidth and launch
/// samples of every backend.
Graph addChainGraph(int64_t elements, int count);

/// Writes "[  t s] message", t the seconds since `start`, and flushes.
void logProgress(llvm::raw_ostream &log,
                 std::chrono::steady_clock::time_point start,
                 const llvm::Twine &message);

/// Fits all_reduce over Gloo between `devices` in-process ranks (at least
/// 2) into hw's intra_node link (latency per step, bandwidth) and nic.
llvm::Error calibrateCollectives(int devices, bool quick, pb::Hardware &hw,
                                 llvm::raw_ostream &log);

} // namespace strata
