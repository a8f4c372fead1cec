//===- Trainer.h - The one trainer: any layout, serial included
//------------===//
//
// Runs the programs of the one compiler (passes/pipeline/ParallelCompile.h:
// autodiff, megatron seeds + spmd, recompute, pipeline, fusion, memory) on a
// DeviceGroup holding the mesh <pp=P (when P > 1), dp=D, tp=T>: serial is a
// mesh of one device and one stage, tp x dp is one stage on D*T devices.
// Ranks [r*D*T, (r+1)*D*T) are pipeline rank r. Each local rank runs its
// pipeline rank's instruction stream of the schedule (Schedule.h) in order:
//
//   F k.c  the forward program of chunk c on microbatch k: inputs by name
//          (parameters, the rank's block of the microbatch's tokens and
//          labels), `recv`s from the previous stage, `send`s (eager) to the
//          next; its stash outputs are kept for B k.c, the head's loss
//          summed.
//   B k.c  the backward program: the stash of (k, c) as inputs (then
//          returned to the rank's pool); its grad.<p> outputs are written
//          into the gradient buffers by the first microbatch, added by the
//          others.
//   OPT    the rank's optimizer program on the gradients averaged over the
//          microbatches: the global norm's all_reduce over pp, the tied
//          parameters' gradient and update messages, AdamW (with ZeRO-1 on
//          the rank's dp shard of the moments) for the parameters the rank
//          owns.
//
// Microbatch k of step s draws dropout counter s * M + k, so every layout
// computes the serial run's losses. Each rank draws only its own blocks of
// the parameters from the counter-based initializer; gatherState /
// scatterState speak the serial names and logical shapes (through the
// group's communicators when ranks live in other processes), so
// checkpoints move between layouts.
//
// Memory follows passes/memory's plan, used as the compiler stored it: each
// program runs from its buffer plan in one workspace per device, F writes
// its stash slots directly (slots are pooled: a step allocates nothing once
// the first has run), the optimizer updates the state in place, and an
// eager send's copy is freed once the schedule proves it received
// (SendCompletion.h). measuredMemory() reports what a step held.
//
// A failing rank stops its peers within the group's timeout as in
// DeviceGroup::forEachRank.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/ParallelCompile.h"
#include "runtime/DeviceBuffer.h"
#include "runtime/Trace.h"
#include "runtime/parallel/DeviceGroup.h"
#include "runtime/parallel/ParallelConfig.h"
#include "runtime/train/TrainOptions.h"

#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace strata {

/// The device mesh a config runs on: <pp=P (when P > 1), dp, tp>.
Mesh trainingMesh(const ParallelConfig &config);

/// The compiler's options for a training config: microbatches are
/// options.gradAccum. Errors (layers < stages, microbatches that do not fit
/// the schedule, ...) come from here, before anything runs.
ParallelCompileOptions trainingCompileOptions(const ParallelConfig &config,
                                              const TrainOptions &options);

/// What one device of a pipeline rank allocated during the last step, in
/// bytes (compare passes/memory's RankMemory).
struct MeasuredMemory {
  int64_t parameters = 0, gradients = 0, optimizerState = 0;
  /// The most stash bytes held at once (F outputs kept for B).
  int64_t maxStash = 0;
  /// The one arena the rank's programs run in: the largest of their buffer
  /// plans.
  int64_t workspace = 0;
  /// The most bytes of eager sends awaiting their peer (copies the
  /// communicator keeps until the step's end; the plan does not count them).
  int64_t messages = 0;
  /// The most stash and message bytes held at once.
  int64_t maxHeld = 0;
  int64_t staticBytes() const {
    return parameters + gradients + optimizerState;
  }
  /// Everything allocated at once at the step's busiest moment.
  int64_t peak() const { return staticBytes() + maxHeld + workspace; }
};

class Trainer {
public:
  /// Compiles the programs and binds them to the group, which must hold
  /// (this process's part of) trainingMesh(config) and outlive the trainer.
  static llvm::Expected<std::unique_ptr<Trainer>>
  create(const Graph &forward, const Graph &evalForward,
         const TrainOptions &options, const ParallelConfig &config,
         DeviceGroup &group);
  /// Runs already compiled programs (a plan file's): `compiled` must be
  /// compilePipeline's result for `forward` under trainingCompileOptions(
  /// config, options); the eval programs are still compiled here.
  static llvm::Expected<std::unique_ptr<Trainer>>
  create(CompiledPipeline compiled, const Graph &forward,
         const Graph &evalForward, const TrainOptions &options,
         const ParallelConfig &config, DeviceGroup &group);
  ~Trainer();

  /// Sets every held parameter block from the serial initializer; zero
  /// moments.
  llvm::Error initParams();
  /// One optimizer step (the schedule's streams on every rank); increments
  /// step().
  llvm::Expected<StepStats> step(const BatchFn &batch);
  /// Loss of the forward programs without dropout on one global batch.
  llvm::Expected<double> evalLoss(const int32_t *tokens, const int32_t *labels);

  int64_t step() const { return step_; }
  /// Sets the step and the updates made to `s`.
  void setStep(int64_t s) { step_ = updates_ = s; }
  /// Optimizer updates made: the steps less the skipped ones (loss
  /// scaling). The learning-rate schedule and AdamW's step count follow it.
  int64_t updates() const { return updates_; }
  void setUpdates(int64_t u) { updates_ = u; }
  /// The loss scale's state machine (runtime/train/LossScaler.h); null
  /// without loss scaling.
  LossScaler *lossScaler() { return scaler_.get(); }
  const CompiledPipeline &compiled() const { return *plan_; }
  const ParallelConfig &config() const { return config_; }
  /// Records each program run and the devices' collectives and copies into
  /// `trace` (runtime/Trace.h); null stops recording.
  void setTrace(Trace *trace);
  /// Per pipeline rank held by this process (its first device): the bytes
  /// allocated during the last step; zero for ranks elsewhere.
  std::vector<MeasuredMemory> measuredMemory() const;

  /// `<p>`, `adam_m.<p>`, `adam_v.<p>` (parameter order) as logical tensors,
  /// read from the rank that owns each parameter's update; every process of
  /// a job must call it.
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>> gatherState();
  /// Sets the state from logical tensors by those names: every rank that
  /// holds a parameter takes its block; a missing or misshapen tensor is an
  /// error naming it.
  llvm::Error
  scatterState(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) {
    return scatter(lookup, /*moments=*/true);
  }
  /// Sets the parameters `<p>` from logical tensors (imported weights, a
  /// reference's) and zeroes the moments.
  llvm::Error
  loadParams(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup) {
    return scatter(lookup, /*moments=*/false);
  }

  /// One microbatch through every stage (F, then B): the loss and the
  /// logical gradients `grad.<p>` (summed over dp and over the ranks that
  /// hold a tied parameter), for verification.
  llvm::Expected<std::vector<std::pair<std::string, HostTensor>>>
  lossAndGrads(const int32_t *tokens, const int32_t *labels);

private:
  struct RankState;
  Trainer(DeviceGroup &g);
  llvm::Error bind();
  llvm::Error connectGroups();
  llvm::Error
  scatter(llvm::function_ref<const HostTensor *(llvm::StringRef)> lookup,
          bool moments);
  /// The rank's F, B and optimizer programs, run from the stored buffer
  /// plans in the rank's workspace.
  llvm::Error createExecutables(RankState &r);
  llvm::Error bindEval();
  /// Zeroes every rank's gradient buffers on its stream: the B programs
  /// accumulate into them.
  void zeroGradients();
  /// Makes r's GradReducer, which lays out its gradient buffers in buckets,
  /// and its ParamGatherer (runtime/parallel/GradReducerBind.cpp).
  llvm::Error bindGradReducer(RankState &r);
  /// Finishes every rank's pending ZeRO-1 parameter gathers (before the
  /// parameters are read other than by a step's forward).
  llvm::Error flushParamGathers();
  /// Drops them (the parameters were set whole).
  void discardParamGathers();
  // Loss scaling (runtime/train/LossScaling.cpp).
  /// Checks the plan takes a loss scale iff the run scales; allocates r's
  /// %loss_scale input.
  llvm::Error bindLossScale(RankState &r);
  /// Enqueues `scale` into every rank's %loss_scale input.
  void writeLossScale(float scale);
  /// Divides every rank's gradients by microbatches * scale; whether any
  /// rank's hold inf / nan (the same answer on every rank). `inject`: apply
  /// opts_.injectInfAt first.
  llvm::Expected<bool> unscaleGradients(float scale, int64_t microbatches,
                                        bool inject);
  /// One microbatch's unscaled gradients (lossAndGrads).
  llvm::Error microbatchGradients();
  /// Every rank's blocks of the global microbatches (tokens, labels).
  llvm::Error scatterBatches(llvm::ArrayRef<HostTensor> tokens,
                             llvm::ArrayRef<HostTensor> labels);
  /// Runs `streams[pipeline rank]` on every rank; dropout counter
  /// counterBase + microbatch. With `eval`, the eval programs' F.
  /// With `completed` (SendCompletion.h), sends are freed as soon as the
  /// schedule says they were received.
  using CompletedSends = std::vector<std::vector<std::vector<int32_t>>>;
  llvm::Error runStreams(llvm::ArrayRef<std::vector<Instr>> streams,
                         uint64_t counterBase, StepStats *stats, bool eval,
                         const CompletedSends *completed = nullptr);
  /// Enqueues on r's stream the waits for `in`'s sends to be received.
  llvm::Error waitForSends(RankState &r, Communicator &c, const Instr &in);
  llvm::Error runInstr(RankState &r, size_t local, const Instr &in,
                       uint64_t counterBase, StepStats *stats, bool eval);
  llvm::Error runOptimizer(RankState &r, size_t local, double lr);
  /// One microbatch's F of every chunk, then (unless `forwardOnly`) B in
  /// reverse: a deadlock-free order for a single microbatch.
  std::vector<std::vector<Instr>> singleMicrobatch(bool forwardOnly) const;
  /// The logical value of the head's loss, the mean over the first
  /// `microbatches` of the step.
  llvm::Expected<double> headLoss(int64_t microbatches);
  /// The logical tensor of type `type` from the blocks of pipeline rank
  /// `pipeRank` (`block` is called on the local ranks there).
  llvm::Expected<HostTensor>
  gatherFromRank(int64_t pipeRank, const TensorType &type, const Sharding &s,
                 llvm::function_ref<const DeviceBuffer &(RankState &)> block);

  DeviceGroup &group_;
  TrainOptions opts_;
  ParallelConfig config_;
  Graph forward_, evalForward_; // logical
  std::unique_ptr<CompiledPipeline> plan_, eval_;
  Mesh stageMesh_; // the mesh without pp: one pipeline rank's devices
  std::vector<std::string> names_; // parameters, in order
  llvm::StringMap<Sharding> paramSharding_, momentSharding_;
  llvm::StringMap<int64_t> owner_; // pipeline rank that updates a parameter
  /// Pipeline ranks whose programs read a parameter, ascending.
  llvm::StringMap<llvm::SmallVector<int64_t, 2>> holders_;
  std::vector<std::unique_ptr<RankState>> ranks_; // by local rank
  CompletedSends completed_;                      // of the step's streams
  Trace *trace_ = nullptr;
  int64_t step_ = 0, updates_ = 0;
  std::unique_ptr<LossScaler> scaler_;
};

} // namespace strata
