//===- NcclCommunicator.h - One NCCL communicator on its own stream -------===//
//
// A process group of the CUDA backend: one NCCL communicator (Nccl.h) and
// the communication stream its work is enqueued on. Buffers are device
// buffers. Each call is ordered with a compute stream by events: the
// communication stream waits for the compute stream's work so far, runs the
// NCCL call, and the compute stream's later work waits for it. Without a
// compute stream (the Communicator interface's blocking contract) a call
// waits until its work is done.
//
// Sends are eager, as the pipeline expects (passes/pipeline/Schedule.h): a
// send copies its buffer to a staging buffer on the compute stream and the
// compute stream does not wait for the send. A staging buffer is reused
// once its send is done (a host callback on the communication stream says
// so). The scratch of a packed collective is reused by the next collective
// of its compute stream at once: that stream's later work runs after every
// use (stream-ordered reuse, as PyTorch's caching allocator). So the
// buffers held at once are those of the sends in flight and one packed
// collective per size, not a whole step's.
//
// The watchdog (NcclWatchdog.h) sees every call: host callbacks on the
// communication stream mark when the stream reaches the call and when the
// call finished, so a call stuck longer than the timeout is found.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/comm/Communicator.h"
#include "runtime/cuda/nccl/Nccl.h"

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace strata {
class Trace;
}

namespace strata::cuda {

class NcclWatchdog;

class NcclCommunicator : public Communicator {
public:
  /// `comm` (initialized) of `size` ranks, this one `rank`; `name` names the
  /// group in errors ("[tp] (ranks 0,1)"); `globalRanks[i]` is group rank
  /// i's rank in the job.
  NcclCommunicator(Nccl &nccl, Driver &driver, NcclWatchdog &watchdog,
                   NcclComm comm, StreamHandle stream, int64_t rank,
                   int64_t size, std::string name,
                   std::vector<int64_t> globalRanks);
  ~NcclCommunicator() override;

  int64_t rank() const override { return rank_; }
  int64_t size() const override { return size_; }
  const std::string &name() const { return name_; }
  NcclComm comm() const { return comm_; }

  /// Orders the following calls with `compute` (null: they block).
  void orderWith(StreamHandle compute) { compute_ = compute; }
  /// Records the following calls into `trace` (null: none) as rank
  /// `rank`'s, on a row "nccl <group>": from the moment the communication
  /// stream reaches a call until it finished.
  void setTrace(Trace *trace, int64_t rank) {
    trace_ = trace;
    traceRank_ = rank;
  }

  llvm::Error allReduce(void *buf, int64_t count, DType dt,
                        ReduceOp op) override;
  /// Out of place: out[count] = the reduction of every rank's in[count].
  llvm::Error allReduce(const void *in, void *out, int64_t count, DType dt,
                        ReduceOp op);
  llvm::Error allGather(const void *in, void *out, int64_t count,
                        DType dt) override;
  llvm::Error reduceScatter(const void *in, void *out, int64_t count, DType dt,
                            ReduceOp op) override;
  /// Grouped sends and receives (NCCL has no all-to-all).
  llvm::Error allToAll(const void *in, void *out, int64_t count,
                       DType dt) override;
  llvm::Error broadcast(void *buf, int64_t count, DType dt,
                        int64_t root) override;
  /// Point to point; NCCL matches messages per peer in issue order, so the
  /// tag is not sent.
  llvm::Error send(const void *buf, int64_t count, DType dt, int64_t peer,
                   uint32_t tag) override;
  llvm::Error recv(void *buf, int64_t count, DType dt, int64_t peer,
                   uint32_t tag) override;
  llvm::Error postSend(const void *buf, int64_t count, DType dt, int64_t peer,
                       uint32_t tag) override;
  /// Eager sends complete in stream order: nothing to wait for here.
  llvm::Error waitSends() override { return llvm::Error::success(); }
  llvm::Error waitSend(int64_t, uint32_t) override {
    return llvm::Error::success();
  }

  /// A device buffer of `bytes` for a packed collective of `stream`: one
  /// `stream` recycled, else a new one.
  llvm::Expected<DevicePtr> scratch(int64_t bytes, StreamHandle stream);
  /// Gives scratch `p` back once the collective's last use of it is
  /// enqueued on `stream`; later work of `stream` may take it at once.
  void recycle(DevicePtr p, StreamHandle stream);
  /// Waits for the communication stream; every buffer is then free for any
  /// stream.
  llvm::Error release();

private:
  /// Enqueues `call` on the communication stream, ordered and watched (see
  /// the file comment); `what` and `peer` (-1: every peer) name it, `bytes`
  /// is what it moves. `joinCompute`: the compute stream waits for it.
  llvm::Error run(const char *what, int64_t peer, bool joinCompute,
                  int64_t bytes,
                  const std::function<NcclResult(StreamHandle)> &call);
  llvm::Error failed(const char *what, const std::string &peers, NcclResult r);

  Nccl &nccl_;
  Driver &driver_;
  NcclWatchdog &watchdog_;
  NcclComm comm_;
  StreamHandle stream_, compute_ = nullptr;
  Trace *trace_ = nullptr;
  int64_t traceRank_ = 0;
  EventHandle before_ = nullptr, after_ = nullptr;
  int64_t rank_, size_;
  std::string name_;
  std::vector<int64_t> globalRanks_;
  /// A staging or scratch buffer; `stream`: the compute stream whose later
  /// work may reuse it (null: any, its last use is done).
  struct Buffer {
    DevicePtr ptr = 0;
    int64_t bytes = 0;
    StreamHandle stream = nullptr;
    bool staging = false;
  };
  /// A free buffer of the kind and size usable on `stream`, else a new one.
  llvm::Expected<DevicePtr> take(int64_t bytes, StreamHandle stream,
                                 bool staging);
  /// Frees the staging buffers whose sends are done.
  void collectDone();
  std::vector<Buffer> held_, free_;
  /// Staging buffers whose send is done, from the host callbacks.
  struct DoneSends {
    std::mutex mu;
    std::vector<DevicePtr> ptrs;
  };
  std::shared_ptr<DoneSends> done_ = std::make_shared<DoneSends>();
};

/// NCCL's type of `dt`.
NcclDataType ncclType(DType dt);

} // namespace strata::cuda
