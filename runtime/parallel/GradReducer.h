//===- GradReducer.h - Data-parallel gradient reduction, in place, in buckets
//
// One local rank's gradient buffers, laid out in buckets, and their
// reduction over dp, as Megatron-LM's DistributedDataParallel does:
//
//  - layout: the rank's gradients are grouped, in the order the backward
//    makes them final, into buckets of about GradReduceOptions::bucketBytes
//    (Megatron's bucket_size). Each bucket is one device allocation and each
//    gradient buffer a view into it (every offset a multiple of 256 bytes):
//    first the gradients all-reduced, then those reduce-scattered, then those
//    not reduced (dp 1).
//  - reduction, in place, per bucket: x *= 1 / microbatches (the step's
//    average), then one all_reduce over dp of the bucket's all-reduced
//    range and, with ZeRO-1, one reduce_scatter per gradient the optimizer
//    program takes as its dp shard (`dp_reduce="reduce_scatter", dp_dim=D`
//    on its input, passes/pipeline/StageOptimizer.cpp), which writes the
//    shard, packed, at offset shard-index x shard-bytes of the gradient's own
//    buffer, where optimizerInput points. No gradient-sized copy is made.
//  - overlap (Megatron's overlap_grad_reduce): a bucket is issued on the
//    rank's reduction stream as soon as the compute stream has run the node
//    that makes its last gradient final in the last microbatch's backward
//    of that gradient's chunk (Executable::enqueue's afterNode); the stream
//    waits for an event recorded there, so the rest of the backward runs
//    while the bucket is reduced. Without overlap, every bucket is issued
//    after the backward. finish() makes the compute stream wait for the
//    reductions, so the optimizer sees them done. Both issue the same
//    operations on the same bytes in the same order, and reductions are
//    deterministic (runtime/comm/Communicator.h): results are bitwise equal.
//
// The collectives are graph nodes launched through Device::launch, so the
// CPU devices run them over Gloo on the stream's thread, CUDA devices over
// NCCL (interpret mode: emulated over Gloo) on the communicator's stream,
// and `--trace` shows them on the reduction stream's row.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/pipeline/Bindings.h"
#include "passes/pipeline/Schedule.h"
#include "runtime/parallel/GradReduceOptions.h"
#include "runtime/DeviceBuffer.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace strata {

/// One chunk's programs on a rank: where each gradient becomes final (B),
/// and which collectives run beside the reductions (F and B).
struct ChunkPrograms {
  const Graph *forward = nullptr;
  const Graph *backward = nullptr;
  const ProgramBindings *backwardBindings = nullptr;
  const ProgramBindings *forwardBindings = nullptr;
};

class GradReducer {
public:
  /// Lays out `grads` (the rank's gradient buffers, local types) in buckets,
  /// replacing each by a view into its bucket (zeroed). `opt` / `optBindings`
  /// are the rank's optimizer program, whose gradient inputs say how each is
  /// reduced; `chunks` its backward programs by chunk; `stream` its
  /// instructions for a step; `dpIndex` / `dpSize` its place over dp.
  static llvm::Expected<std::unique_ptr<GradReducer>>
  create(Device &device, llvm::StringMap<DeviceBuffer> &grads, const Graph &opt,
         const ProgramBindings &optBindings,
         llvm::ArrayRef<ChunkPrograms> chunks, llvm::ArrayRef<Instr> stream,
         int64_t dpIndex, int64_t dpSize, const GradReduceOptions &options);
  ~GradReducer();

  /// Whether any gradient is reduced over dp (the trainer connects the dp
  /// group then).
  bool reducesOverDp() const;
  /// Whether buckets are issued during the backward: asked for, and no F or
  /// B program of the rank uses the dp group itself (the reductions would
  /// share its communicator with the compute stream's collectives).
  bool overlaps() const { return overlap_; }
  /// The stream the reductions run on (the rank's dp stream).
  StreamId stream() const { return stream_; }

  /// Starts a step of `microbatches` whose launches use `ctx` (comms, mesh,
  /// rank); until finish(), afterNode issues the buckets that become ready.
  void beginStep(int64_t microbatches, const LaunchContext &ctx);
  /// Called by the backward of (chunk, microbatch) after its node `node`
  /// is enqueued on the compute stream (Executable::enqueue's afterNode).
  void afterNode(int64_t chunk, int64_t microbatch, size_t node);
  /// Issues the buckets not issued yet and makes the compute stream wait
  /// for every reduction of the step.
  void finish();
  /// Where the optimizer program's input %grad.<name> is: the gradient
  /// buffer, or with ZeRO-1 this rank's reduced shard in it. Null if the
  /// rank holds no such gradient.
  const void *optimizerInput(llvm::StringRef name) const;

private:
  struct Bucket;
  explicit GradReducer(Device &device);
  void issue(Bucket &b);

  Device &dev_;
  StreamId stream_ = kDefaultStream;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  size_t next_ = 0; // the first bucket not issued this step
  llvm::StringMap<const void *> optInputs_;
  std::unique_ptr<Event> done_;
  LaunchContext ctx_;
  int64_t microbatches_ = 1;
  std::vector<int32_t> lastMicrobatch_; // by chunk
  bool overlap_ = false;
  bool armed_ = false;
};

} // namespace strata
