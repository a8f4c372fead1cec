//===- Verify.h - A parallel plan against the serial plan, numerically
//-----===//
//
// What `strata verify` runs: the Trainer on one CPU device (the serial
// plan) and on tp*dp*pp in-process CPU devices, the serial run accumulating
// as many microbatches, from the same initial weights and the same batches
// (random tokens from a seed), compared tensor by tensor:
//   - optionally (tp x dp only) every value of the first microbatch program
//     that both plans name (activations and backward values, in serial
//     program order; a parallel value is put back together from its shards
//     and partial sums);
//   - the loss and every parameter gradient of one microbatch;
//   - the loss of each of N AdamW steps;
//   - AdamW's moments after the first (Verify.cpp says why not later ones
//     or the parameters).
// Under `strata launch` (VerifyOptions::env) each process is one rank of the
// parallel plan and compares the tensors gathered from all ranks with the
// serial plan it runs itself.
// A tensor's difference is max|parallel - serial| / max|serial| (normwise
// relative, so elements near zero do not dominate), where max|serial| is at
// least kVerifyZeroFloor (1e-3) of the largest element of its group (values,
// gradients): a tensor below that is numerically zero (the key bias's
// gradient is exactly zero, as softmax ignores a shift of the scores;
// computed, it is rounding noise), and its noise is measured against that
// floor: an absolute tolerance scaled by the group's magnitude.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontends/ModelSpec.h"
#include "runtime/parallel/DeviceGroup.h"
#include "runtime/parallel/ParallelConfig.h"
#include "runtime/train/TrainOptions.h"

#include <optional>
#include <string>
#include <vector>

namespace strata {

/// The fraction of a group's largest element below which a tensor is
/// numerically zero and compared against that floor (see Verify.cpp).
extern const double kVerifyZeroFloor;

struct VerifyOptions {
  ParallelConfig parallel;
  int64_t steps = 5;
  /// Normwise relative tolerance. The default suits f32: see Verify.cpp.
  double tolerance = 1e-5;
  bool activations = false;
  uint64_t dataSeed = 1;
  DeviceGroupOptions devices;
  /// This process's rank of a multi-process job (`strata launch`, torchrun):
  /// the parallel plan runs one rank per process and each process runs the
  /// serial plan itself and compares the gathered tensors with it; nullopt
  /// runs every rank in this process.
  std::optional<DistEnv> env;
};

struct TensorDiff {
  std::string name; // `loss`, `grad.<p>`, `step 3 loss`, or a value's name
  double maxAbsDiff = 0;
  double scale = 0;   // max |serial|
  double relDiff = 0; // maxAbsDiff / max(scale, the group's floor)
  bool ok = true;
};

struct VerifyReport {
  std::vector<TensorDiff> diffs; // in comparison order
  /// The first tensor beyond tolerance, or null.
  const TensorDiff *firstFailure() const;
};

/// The normwise relative difference of two tensors of one type, against a
/// scale of at least `floor`.
TensorDiff compareTensors(llvm::StringRef name, const HostTensor &got,
                          const HostTensor &want, double tolerance,
                          double floor = 0);

/// Runs both plans of `model` and compares them (see the file comment).
llvm::Expected<VerifyReport> verifyParallel(const ModelConfig &model,
                                            const TrainOptions &training,
                                            const VerifyOptions &options);

} // namespace strata
