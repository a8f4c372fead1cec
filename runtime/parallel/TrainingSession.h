//===- TrainingSession.h - A training job's devices and trainer -----------===//
//
// What a training run (runtime/train/TrainingRun) drives: the one Trainer
// (runtime/parallel/Trainer.h) on a DeviceGroup made by a backend
// (Backend.h: CPU devices with Gloo communicators): every rank in this process,
// or one rank per process of a job started the torchrun way (DeviceGroup.h).
// State crosses this interface as logical tensors with the serial names, so
// checkpoints do not depend on the layout.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/parallel/Trainer.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {

class TrainingSession {
public:
  /// Checks the layout against the model, then creates the devices and the
  /// trainer. With `programs` (a plan file's, compiled for `parallel` and
  /// `options`), the trainer runs them instead of compiling its own.
  static llvm::Expected<std::unique_ptr<TrainingSession>>
  create(const Graph &forward, const Graph &evalForward,
         const TrainOptions &options, const ParallelConfig &parallel,
         const CompiledPipeline *programs = nullptr,
         const DeviceGroupOptions &devices = {});

  llvm::Error initParams() { return trainer_->initParams(); }
  /// One optimizer step; increments step().
  llvm::Expected<StepStats> step(const BatchFn &batch) {
    return trainer_->step(batch);
  }
  llvm::Expected<double> evalLoss(const int32_t *tokens,
                                  const int32_t *labels) {
    return trainer_->evalLoss(tokens, labels);
  }
  int64_t step() const { return trainer_->step(); }
  void setStep(int64_t step) { trainer_->setStep(step); }
  /// `<p>`, `adam_m.<p>`, `adam_v.<p>` as logical tensors; in a
  /// multi-process job every process must call it.
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>> state() {
    return trainer_->gatherState();
  }
  /// Sets the state from logical tensors by those names.
  llvm::Error
  loadState(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) {
    return trainer_->scatterState(lookup);
  }
  /// Whether this process reports and writes files (rank 0, or serial).
  bool isWriter() const { return !env_ || env_->rank == 0; }
  /// Whether `local` holds on any process of the job (every process must
  /// call it); `local` itself in a single-process run.
  llvm::Expected<bool> anyProcess(bool local);
  /// "1 CPU device", "4 CPU devices (tp=2 dp=2)", "..., rank 1 of 4
  /// processes".
  std::string describe() const;
  Trainer &trainer() { return *trainer_; }

private:
  TrainingSession() = default;
  std::optional<DistEnv> env_;
  ParallelConfig config_;
  Backend backend_ = Backend::Cpu;
  bool fromPlan_ = false;
  std::unique_ptr<DeviceGroup> group_;
  std::unique_ptr<Trainer> trainer_; // uses group_: declared after
};

} // namespace strata
