//===- CalibrateDevice.h - Measure an accelerator through its Device ------===//
//
// `strata calibrate --device cuda` describes a GPU by running the backend's
// own kernels through runtime/Device.h, as training does: one-node graphs
// (a matmul, an attention, a chain of adds) prepared into Executables and
// enqueued back to back, timed in wall time around a synchronize (the best
// of a few batches):
//
//   GEMMs       matmul of every (m, n, k) of a grid and the three
//               transposes of training, in f32 and in bf16 (16-bit operands,
//               fp32 accumulation: the `half` samples), under a FLOP cap
//   attention   causal attention forward and backward over (seq, head_dim),
//               f32 and bf16
//   bandwidth   add chains over working sets from cache-sized to beyond
//   launch      a chain of 1-element adds: the per-node cost
//
// One device cannot measure the links between devices: they, the node size
// and the GEMM tile model come from `base` (a built-in or file description
// of the same accelerator), and the result says so in its source.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "proto/hardware.pb.h"
#include "runtime/Device.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace strata {

struct DeviceCalibrateOptions {
  std::string name;
  /// Tiny shapes and short timings: the interpret-mode test of the path.
  bool quick = false;
};

/// Measures `device` (see the file comment) into a copy of `base`. Progress
/// lines go to `log`.
llvm::Expected<pb::Hardware>
calibrateDevice(Device &device, const pb::Hardware &base,
                const DeviceCalibrateOptions &options, llvm::raw_ostream &log);

} // namespace strata
