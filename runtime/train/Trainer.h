//===- Trainer.h - One model's training state and step ---------------------===//
//
// The Trainer owns the three programs of a serial training job and its state:
//   microbatch program = autodiff(forward): tokens, labels, params -> loss, grads
//   optimizer program  = clip + AdamW over the accumulated grads
//   eval program       = the forward graph without dropout: -> loss
// A step runs the microbatch program once per accumulated microbatch (grads
// summed, then averaged), then the optimizer program. State (params, AdamW
// moments, step) lives in host memory, so today it needs a device whose
// buffers are host memory (CpuDevice).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/optimizer/OptimizerGraph.h"
#include "runtime/Device.h"
#include "runtime/HostTensor.h"
#include "runtime/Interpreter.h"
#include "runtime/train/LRSchedule.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strata {

struct TrainOptions {
  int64_t gradAccum = 1;
  LRSchedule schedule;
  OptimizerConfig optimizer;
  uint64_t seed = 1337;  // init, dropout
  /// Fuse elementwise chains of the three programs (passes/fusion); the CPU
  /// compiles their kernels once, at create (runtime/cpu/FusedKernels.h).
  bool fusion = false;
};

struct StepStats {
  double loss = 0;      // mean over the step's microbatches
  double gradNorm = 0;  // global norm before clipping
  double lr = 0;
};

/// Writes microbatch `micro` of the current step as i32 [B,S] tokens/labels.
using BatchFn =
    std::function<void(int64_t micro, int32_t *tokens, int32_t *labels)>;

class Trainer {
public:
  /// `forward` is the logical forward graph (loss output, `param` inputs,
  /// `tokens`/`labels` data inputs); `evalForward` the same model without
  /// dropout.
  static llvm::Expected<std::unique_ptr<Trainer>>
  create(Graph forward, Graph evalForward, const TrainOptions &options,
         Device &device);

  /// Sets every parameter from its init attributes and zeroes the moments.
  llvm::Error initParams();
  /// One optimizer step; increments step().
  llvm::Expected<StepStats> step(const BatchFn &batch);
  /// Loss of the forward graph (no dropout) on one batch.
  llvm::Expected<double> evalLoss(const int32_t *tokens, const int32_t *labels);

  int64_t step() const { return step_; }
  void setStep(int64_t s) { step_ = s; }
  int64_t batch() const { return batch_; }
  int64_t seqLen() const { return seq_; }
  const Graph &microbatchGraph() const { return micro_; }
  const Graph &optimizerGraph() const { return opt_; }

  /// Named state for checkpoints: `<p>`, `adam_m.<p>`, `adam_v.<p>`.
  std::vector<std::pair<std::string, HostTensor *>> namedState();
  /// Parameters by name, in graph input order.
  std::vector<std::pair<std::string, HostTensor *>> namedParams();

  /// Runs the microbatch program once on a batch: loss and the gradients
  /// `grad.<p>` (for tests against references).
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
  lossAndGrads(const int32_t *tokens, const int32_t *labels);

private:
  Trainer(Device &d) : dev_(d) {}
  llvm::Error bind();
  /// The buffer of a model-program input: a parameter, tokens or labels.
  const void *modelInput(const Value &v, const int32_t *tokens,
                         const int32_t *labels) const;
  /// Runs `interp` with inputs looked up by name; outputs by graph order.
  llvm::Error runNamed(Interpreter &interp,
                       const std::function<const void *(const Value &)> &input,
                       std::vector<void *> &outputs, uint64_t dropoutStep);

  Device &dev_;
  TrainOptions opts_;
  Graph fwd_, eval_, micro_, opt_;
  std::unique_ptr<Interpreter> microRun_, optRun_, evalRun_;
  std::vector<ValueId> params_;                  // param inputs of micro_
  std::vector<HostTensor> p_, m_, v_, grads_;    // by param index
  llvm::StringMap<size_t> paramIndex_;
  HostTensor tokens_, labels_;
  int64_t batch_ = 0, seq_ = 0, step_ = 0;
};

} // namespace strata
