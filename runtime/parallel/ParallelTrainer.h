//===- ParallelTrainer.h - Training on a mesh of devices -------------------===//
//
// The parallel counterpart of runtime/train/Trainer: the same step (grads of
// every microbatch accumulated, averaged, one optimizer program run), on the
// programs of runtime/parallel/ParallelPlan run by every rank of a
// DeviceGroup. Each local rank keeps its shards of the parameters, of the
// AdamW moments (split over dp too with the distributed optimizer) and of
// the accumulated gradients (partial sums over dp until the optimizer
// program reduces them). The batch callback writes the global microbatch;
// each rank takes its dp block. Losses are reduced over dp for reporting.
//
// Parameters are drawn from the serial initializer (counter-based, so the
// shards are exactly the serial tensors' blocks), and gatherState /
// scatterState speak the serial Trainer's names and logical shapes, so a
// checkpoint moves between serial and parallel runs of any layout.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/parallel/DeviceGroup.h"
#include "runtime/parallel/ParallelInterpreter.h"
#include "runtime/parallel/ParallelPlan.h"
#include "runtime/train/Trainer.h"

#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace strata {

class ParallelTrainer {
public:
  /// `group` must hold (part of) mesh<dp=config.dp,tp=config.tp> and outlive
  /// the trainer.
  static llvm::Expected<std::unique_ptr<ParallelTrainer>>
  create(const Graph &forward, const Graph &evalForward,
         const TrainOptions &options, const ParallelConfig &config,
         DeviceGroup &group);

  /// Sets every parameter shard from the serial initializer; zero moments.
  llvm::Error initParams();
  /// One optimizer step on every rank; increments step().
  llvm::Expected<StepStats> step(const BatchFn &batch);
  /// Loss of the forward program (no dropout) on one global batch.
  llvm::Expected<double> evalLoss(const int32_t *tokens, const int32_t *labels);

  int64_t step() const { return step_; }
  void setStep(int64_t s) { step_ = s; }
  const ParallelPrograms &programs() const { return programs_; }

  /// The logical state `<p>`, `adam_m.<p>`, `adam_v.<p>` (parameter order),
  /// gathered from every rank; every process of a job must call it.
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>> gatherState();
  /// Sets the state from logical tensors by those names (each rank takes its
  /// blocks); a missing or misshapen tensor is an error naming it.
  llvm::Error
  scatterState(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup);

  /// Runs the microbatch program once on a global batch: the loss and the
  /// logical gradients `grad.<p>` (summed over dp), for verification.
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
  lossAndGrads(const int32_t *tokens, const int32_t *labels);

private:
  struct RankState {
    std::vector<HostTensor> p, m, v, grads; // by parameter index, local types
    HostTensor tokens, labels;              // this rank's block of the batch
    double loss = 0;                        // partial loss of this step
  };
  ParallelTrainer(DeviceGroup &g) : group_(g) {}
  llvm::Error bind();
  /// Cuts the global batch into every rank's block.
  llvm::Error scatterBatch(const int32_t *tokens, const int32_t *labels);
  /// A model program's input on rank `r`: its block of the batch, or the
  /// parameter of that name (null for anything else).
  const void *modelInputOf(const Value &v, RankState &r) const;
  /// Runs `interp` on every rank with inputs found by name, then `after`
  /// on each rank's outputs.
  llvm::Error
  runNamed(ParallelInterpreter &interp,
           llvm::function_ref<const void *(const Value &, RankState &)> input,
           uint64_t dropoutStep,
           llvm::function_ref<llvm::Error(size_t local, llvm::ArrayRef<void *>)>
               after);
  /// The logical value of a scalar output (partial over dp or whole) from
  /// each rank's copy.
  llvm::Expected<double> reduceScalar(const Graph &g, ValueId out,
                                      llvm::ArrayRef<double> perLocal);

  DeviceGroup &group_;
  TrainOptions opts_;
  Graph forward_; // logical, for the initializer and logical shapes
  ParallelPrograms programs_;
  std::unique_ptr<ParallelInterpreter> micro_, opt_, eval_;
  std::vector<std::string> names_; // parameters, in order
  llvm::StringMap<size_t> index_;
  std::vector<RankState> ranks_; // by local rank
  int64_t batch_ = 0, seq_ = 0, step_ = 0;
};

} // namespace strata
