//===- CudaDevice.h - The CUDA backend behind runtime/Device.h ------------===//
//
// A Device over a cuda::Driver (Driver.h): the real driver on a GPU, or the
// emulated one of interpret mode, with the same host code. Buffers are
// device memory (never dereferenced by the host: isHostMemory() is false
// even in interpret mode, so the runtime's copies are exercised); every
// Device stream is a driver stream, events are driver events; copies,
// fills and host work are enqueued on them. The runtime's own kernels
// (gradient accumulation, scaling) are CUDA C in the module of
// hand-written kernels, loaded at creation. Fused
// nodes, and every other op codegen can plan alone (elementwise, dropout,
// row ops such as norms and softmax, column sums), run the kernels codegen
// renders for CUDA (codegen/Renderer.h: the launch contract), compiled per
// graph at prepare() into the graph's module; reshapes are views. Other
// ops run hand-written kernels (OpKernels.h) where they exist (supports()
// says which run). Collectives and send/recv run on NCCL communicators
// (nccl/NcclGroups.h: the real NCCL, or its emulation over Gloo in
// interpret mode; CudaCollectives.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"
#include "runtime/cuda/Driver.h"
#include "runtime/cuda/OpKernels.h"

#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace strata {

namespace cuda {
class AdamWBatch;
class NcclGroups;
} // namespace cuda

class CudaDevice : public Device {
public:
  /// A device over `driver`; loads the runtime's kernels (an error names
  /// the compiler's message).
  static llvm::Expected<std::unique_ptr<CudaDevice>>
  create(std::unique_ptr<cuda::Driver> driver, int index = 0);
  ~CudaDevice() override;

  cuda::Driver &driver() { return *driver_; }
  /// Makes this rank's NCCL communicators (nccl/NcclGroups.h) over
  /// `comms`' mesh, meeting through its rendezvous: every rank of the mesh
  /// calls it, before its first collective (which otherwise makes them).
  llvm::Error connectCollectives(Communicators &comms);
  /// The CUDA C of the kernels prepare() built (empty for none).
  static std::string kernelSource(const KernelModule *module);
  /// Launches of the batched AdamW kernel so far (AdamWBatch.h).
  int64_t adamwLaunches() const;
  /// Whether the compute stream waits for each pipeline send to complete
  /// (its receiver posted the recv), as if the send ran on it; default
  /// false: sends are eager, on their pp communicator's stream, and the
  /// stage computes while they go. For tests comparing the two (a 1F1B
  /// schedule deadlocks with waiting sends; GPipe does not).
  void setSendsJoinCompute(bool join) { sendsJoinCompute_ = join; }

  std::string name() const override;
  bool supports(const Graph &g, const Node &node) const override;
  llvm::Expected<std::unique_ptr<KernelModule>>
  prepare(const Graph &g) override;
  bool isHostMemory() const override { return false; }
  void *allocate(int64_t bytes) override;
  void deallocate(void *ptr) override;
  std::optional<int64_t> freeBytes() override;
  /// `graphs`: the programs of one step, each as often as it runs. The
  /// cuBLASLt workspace, the scratch of the hand-written kernels and of
  /// 16-bit nodes' f32 copies (one buffer each, sized at prepare() for the
  /// largest graph), each graph's column-sum partials, and the NCCL
  /// communicators' buffers: a staging copy of every send of the step (the
  /// most in flight at once, as when the peer receives late) and, per group
  /// and size, the most packing buffers one collective takes (reused in
  /// stream order; the programs' collectives run on one stream).
  int64_t workspaceBytes(llvm::ArrayRef<const Graph *> graphs) override;
  /// The sizes of the packing buffers collective `n` of `g` takes from its
  /// communicator (a dim other than the outermost; CudaCollectives.cpp).
  static std::vector<int64_t> packingBuffers(const Graph &g, const Node &n);
  StreamId createStream() override;
  std::unique_ptr<Event> createEvent() override;
  void record(Event &event, StreamId stream) override;
  void wait(StreamId stream, Event &event) override;
  void enqueueHost(std::function<llvm::Error()> work,
                   StreamId stream = kDefaultStream) override;
  void launch(const Graph &g, const Node &node,
              llvm::ArrayRef<const void *> operands,
              llvm::ArrayRef<void *> results,
              const LaunchContext &ctx) override;
  llvm::Error synchronize() override;
  llvm::Error synchronizeStream(StreamId stream) override;

protected:
  void enqueueCopy(CopyKind kind, void *dst, const void *src, int64_t bytes,
                   StreamId stream) override;
  void enqueueFill(void *dst, int64_t bytes, int value,
                   StreamId stream) override;
  void enqueueScale(void *x, int64_t count, float factor,
                    StreamId stream) override;

private:
  CudaDevice(std::unique_ptr<cuda::Driver> driver, int index);
  cuda::StreamHandle stream(StreamId id) const;
  /// Keeps the first error of an enqueue for synchronize().
  void note(llvm::Error e);
  /// That error (cleared), or success.
  llvm::Error takeFirstError();
  /// Launches the deferred AdamW updates (before anything that may read
  /// or write their memory).
  void flushDeferred();
  /// A 16-bit node on f32 copies (Widen.h): `body` is the node retyped f32,
  /// run by `launcher` or (null) by its generated kernel.
  llvm::Error launchWidened(const Graph &g, const Node &node,
                            llvm::ArrayRef<const void *> operands,
                            llvm::ArrayRef<void *> results,
                            const LaunchContext &ctx, const Graph &body,
                            cuda::OpLauncher launcher);
  /// Where a host-to-device copy of `bytes` from `src` reads: small ones
  /// (per-step scalars: the learning rate, the step) from a slot of a
  /// page-locked pool, filled now, so the copy is asynchronous and the
  /// caller may reuse `src` at once; slots are reused after synchronize().
  const void *staged(const void *src, int64_t bytes);
  /// Device memory of at least `bytes` for launchWidened's copies on `s`.
  llvm::Expected<void *> widenScratch(cuda::StreamHandle s, int64_t bytes);
  /// Makes `s`'s widenScratch at least `bytes` now (prepare), freeing the
  /// buffers it replaces once `s` is idle.
  llvm::Error reserveWiden(cuda::StreamHandle s, int64_t bytes);
  /// A fused node or single op from the graph's generated kernels.
  llvm::Error launchGenerated(const Node &node,
                              llvm::ArrayRef<const void *> operands,
                              llvm::ArrayRef<void *> results,
                              const LaunchContext &ctx);

  /// A collective or send/recv node, on NCCL (CudaCollectives.cpp).
  llvm::Error launchCollective(const Graph &g, const Node &node, const void *in,
                               void *out, const LaunchContext &ctx);
  /// Packs (or unpacks) the blocks of a collective along a dim other than
  /// the outermost: x as [outer, n, blk] to y as [n, outer, blk] (blk in
  /// bytes), on `s`.
  llvm::Error packBlocks(const void *x, void *y, int64_t outer, int64_t n,
                         int64_t blk, bool unpack, cuda::StreamHandle s);

  std::unique_ptr<cuda::Driver> driver_;
  int index_;
  std::unique_ptr<cuda::NcclGroups> nccl_; // connectCollectives
  bool sendsJoinCompute_ = false;
  std::vector<cuda::StreamHandle> streams_;
  std::unique_ptr<cuda::OpKernelModule> opKernels_; // hand-written
  cuda::Function scale_ = nullptr;
  std::unique_ptr<cuda::AdamWBatch> adamw_;
  struct WidenBuffer {
    cuda::StreamHandle stream; // null once replaced by a larger one
    cuda::DevicePtr ptr;
    int64_t bytes;
  };
  std::vector<WidenBuffer> widenScratch_;
  std::mutex stagingMu_;
  char *staging_ = nullptr; // page-locked host memory
  int64_t stagingUsed_ = 0;
  std::mutex adamwMu_;
  std::mutex mu_;
  std::string firstError_;
};

} // namespace strata
