//===- ParamGatherer.h - ZeRO-1's parameter all-gathers, overlapped --------===//
//
// With the distributed optimizer (ZeRO-1) each dp rank updates one shard of
// a parameter; the optimizer program returns that shard as its output
// `%new.<p>` (split over dp along one dim, passes/pipeline/GradReduction.h's
// gatheredDim) and the runtime all-gathers it into the parameter buffer,
// as Megatron-LM's distributed optimizer does with overlap_param_gather:
//
//  - layout: the optimizer writes each updated shard into a buffer of its
//    own (kept across steps); the gathers are grouped into buckets of about
//    GradReduceOptions::bucketBytes (of gathered parameter bytes), in the
//    order the next step's forward reads the parameters (per chunk, the
//    first node of its first forward program that reads one).
//  - overlap (`--overlap-param-gather`, default true): the buckets are
//    issued when the next step's first forward program starts, on the
//    rank's dp stream (the GradReducer's: one stream per communicator keeps
//    every rank's dp collectives in one order), which waits for an event
//    recorded on the compute stream; the compute stream waits for a bucket
//    just before the first node that reads one of its parameters
//    (Executable::enqueue's afterNode), so the forward computes while later
//    buckets are gathered. Whatever reads the parameters otherwise
//    (checkpoints, eval, verification) flushes the gathers first.
//  - without overlap the same buckets are issued right after the optimizer
//    program, and the compute stream waits for them there.
//
// Both gather the same bytes (an all-gather is a copy), so results are
// bitwise equal. The gathers are graph nodes launched through
// Device::launch: over Gloo on the CPU devices' stream thread, over NCCL on
// the dp communicator's stream on CUDA (interpret mode: emulated over
// Gloo), and `--trace` shows them on that stream's row.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/parallel/GradReducer.h"

namespace strata {

class ParamGatherer {
public:
  /// Finds the outputs of the rank's optimizer program `opt` that are dp
  /// shards of the parameters `params` (the rank's buffers), allocates
  /// their shard buffers and buckets their gathers by first reader in
  /// `chunks`' forward programs as `stream` (the rank's instructions for a
  /// step) runs them. `dpStream`: the stream the gathers run on.
  static llvm::Expected<std::unique_ptr<ParamGatherer>>
  create(Device &device, StreamId dpStream,
         llvm::StringMap<DeviceBuffer> &params, const Graph &opt,
         const ProgramBindings &optBindings,
         llvm::ArrayRef<ChunkPrograms> chunks, llvm::ArrayRef<Instr> stream,
         const GradReduceOptions &options);
  ~ParamGatherer();

  /// Where the optimizer program writes its output `%new.<name>` (this
  /// rank's updated shard); null if that output is the whole parameter.
  void *shardOutput(llvm::StringRef name) const;
  /// Bytes of the shard buffers.
  int64_t shardBytes() const;

  /// After the optimizer program is enqueued (ctx: its launch context):
  /// with overlap the gathers wait for the next forward, else they are
  /// issued and waited for now.
  void afterOptimizer(const LaunchContext &ctx);
  /// Before the forward of (chunk, microbatch) is enqueued: issues the
  /// pending gathers, and waits for those read by its first node.
  void beforeForward(int64_t chunk, int64_t microbatch,
                     const LaunchContext &ctx);
  /// After that forward's node `node` is enqueued: waits for the buckets
  /// node + 1 reads first.
  void afterNode(int64_t chunk, int64_t microbatch, size_t node);
  /// Makes the compute stream wait for every gather issued and not waited
  /// for (the end of the step's forwards and backwards).
  void finish();
  /// Issues the pending gathers and waits for them: before anything else
  /// reads the parameters.
  void flush(const LaunchContext &ctx);
  /// Drops the pending gathers: the parameters were set whole.
  void discard() { pending_ = false; }

private:
  struct Bucket;
  explicit ParamGatherer(Device &device, StreamId stream);
  void issueAll(const LaunchContext &ctx);
  void waitThrough(size_t end);

  Device &dev_;
  StreamId stream_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  llvm::StringMap<DeviceBuffer> shards_;
  std::vector<int32_t> firstMicrobatch_; // by chunk: its first forward's
  std::unique_ptr<Event> start_;
  bool overlap_ = true;
  bool pending_ = false; // updated shards not issued yet
  size_t waited_ = 0;    // buckets [0, waited_) waited for
  size_t issued_ = 0;    // buckets [0, issued_) issued
};

} // namespace strata
