//===- TrainingSession.h - Serial or parallel training behind one face -----===//
//
// What a training run (runtime/train/TrainingRun) drives: the serial Trainer
// on one CPU device, or the ParallelTrainer on tp*dp CPU devices, either all
// in this process or one per process of a job started the torchrun way
// (runtime/parallel/DeviceGroup.h). State crosses this interface as logical
// tensors with the serial names, so checkpoints do not depend on the layout.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "runtime/parallel/ParallelPlan.h"
#include "runtime/train/Trainer.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <memory>
#include <string>
#include <vector>

namespace strata {

class TrainingSession {
public:
  virtual ~TrainingSession() = default;
  virtual llvm::Error initParams() = 0;
  /// One optimizer step; increments step().
  virtual llvm::Expected<StepStats> step(const BatchFn &batch) = 0;
  virtual llvm::Expected<double> evalLoss(const int32_t *tokens,
                                          const int32_t *labels) = 0;
  virtual int64_t step() const = 0;
  virtual void setStep(int64_t step) = 0;
  /// `<p>`, `adam_m.<p>`, `adam_v.<p>` as logical tensors; in a
  /// multi-process job every process must call it.
  virtual llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
  state() = 0;
  /// Sets the state from logical tensors by those names.
  virtual llvm::Error
  loadState(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) = 0;
  /// Whether this process reports and writes files (rank 0, or serial).
  virtual bool isWriter() const = 0;
  /// Whether `local` holds on any process of the job (every process must
  /// call it); `local` itself in a single-process run.
  virtual llvm::Expected<bool> anyProcess(bool local) { return local; }
  /// "1 CPU device", "4 CPU devices (tp=2 dp=2)", "..., rank 1 of 4
  /// processes".
  virtual std::string describe() const = 0;
};

/// A serial session when `parallel` asks for one device and the environment
/// names no multi-process job; a parallel one otherwise. The layout is checked
/// against the model before any device is created. With `programs`
/// (a plan file's, compiled for `parallel` and `options`), a pipelined
/// session runs them instead of compiling its own.
llvm::Expected<std::unique_ptr<TrainingSession>>
createTrainingSession(const Graph &forward, const Graph &evalForward,
                      const TrainOptions &options,
                      const ParallelConfig &parallel,
                      const CompiledPipeline *programs = nullptr);

} // namespace strata
