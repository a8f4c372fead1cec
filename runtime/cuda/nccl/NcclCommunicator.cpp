//===- NcclCommunicator.cpp - One NCCL communicator on its own stream -----===//
#include "runtime/cuda/nccl/NcclCommunicator.h"

#include "runtime/Trace.h"
#include "runtime/cuda/nccl/NcclWatchdog.h"

#include <memory>

#include "llvm/Support/ErrorHandling.h"

namespace strata::cuda {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
NcclRedOp redOp(ReduceOp op) { return op == ReduceOp::Max ? ncclMax : ncclSum; }
} // namespace

NcclDataType ncclType(DType dt) {
  switch (dt) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::I32:
    return ncclInt32;
  case DType::I64:
    return ncclInt64;
  case DType::I1:
    return ncclUint8;
  }
  llvm_unreachable("dtype");
}

NcclCommunicator::NcclCommunicator(Nccl &nccl, Driver &driver,
                                   NcclWatchdog &watchdog, NcclComm comm,
                                   StreamHandle stream, int64_t rank,
                                   int64_t size, std::string name,
                                   std::vector<int64_t> globalRanks)
    : nccl_(nccl), driver_(driver), watchdog_(watchdog), comm_(comm),
      stream_(stream), rank_(rank), size_(size), name_(std::move(name)),
      globalRanks_(std::move(globalRanks)) {
  auto b = driver_.createEvent(), a = driver_.createEvent();
  if (!b || !a)
    llvm::report_fatal_error(
        llvm::Twine("NCCL communicator ") + name_ + ": " +
        llvm::toString(llvm::joinErrors(b.takeError(), a.takeError())));
  before_ = *b;
  after_ = *a;
}

NcclCommunicator::~NcclCommunicator() {
  llvm::consumeError(release());
  for (const Buffer &b : free_)
    llvm::consumeError(driver_.free(b.ptr));
  if (!watchdog_.aborted())
    nccl_.commDestroy(comm_);
  llvm::consumeError(driver_.destroyEvent(before_));
  llvm::consumeError(driver_.destroyEvent(after_));
  llvm::consumeError(driver_.destroyStream(stream_));
}

llvm::Error NcclCommunicator::failed(const char *what, const std::string &peers,
                                     NcclResult r) {
  std::string last = nccl_.lastError(comm_);
  return err(llvm::Twine("NCCL ") + what + " over group " + name_ + " with " +
             peers + ": " + nccl_.errorString(r) +
             (last.empty() ? "" : " (" + last + ")"));
}

llvm::Error
NcclCommunicator::run(const char *what, int64_t peer, bool joinCompute,
                      int64_t bytes,
                      const std::function<NcclResult(StreamHandle)> &call) {
  std::string peers;
  if (peer >= 0) {
    peers = "peer rank " + std::to_string(globalRanks_[peer]);
  } else {
    peers = "peer ranks ";
    for (int64_t r = 0; r < size_; ++r)
      if (r != rank_)
        peers +=
            (peers.back() == ' ' ? "" : ",") + std::to_string(globalRanks_[r]);
  }
  if (watchdog_.aborted())
    return err(llvm::Twine("NCCL ") + what + " over group " + name_ + " with " +
               peers + ": the communicators were aborted after a failure");
  if (compute_) {
    if (auto e = driver_.record(before_, compute_))
      return e;
    if (auto e = driver_.wait(stream_, before_))
      return e;
  }
  uint64_t id = watchdog_.issued(comm_, what, name_, peers);
  NcclWatchdog *w = &watchdog_;
  // The call's span in the trace, from its start to its end callback.
  std::shared_ptr<Trace::Event> span;
  if (trace_) {
    span = std::make_shared<Trace::Event>();
    span->rank = traceRank_;
    span->stream = "nccl " + name_;
    span->name = std::string(what) +
                 (peer >= 0 ? " peer " + std::to_string(globalRanks_[peer])
                            : std::string());
    span->category = "collective";
    span->bytes = bytes;
  }
  Trace *trace = trace_;
  if (auto e = driver_.launchHost(
          [w, id, trace, span] {
            w->started(id);
            if (span)
              span->beginUs = trace->nowUs();
            return llvm::Error::success();
          },
          stream_))
    return e;
  NcclResult r = call(stream_);
  // A non-blocking communicator may still be enqueuing the call: it is
  // issued once the asynchronous error is no longer ncclInProgress.
  while (r == ncclInProgress)
    if (nccl_.commGetAsyncError(comm_, &r) != ncclSuccess)
      r = ncclInvalidUsage;
  if (r != ncclSuccess) {
    watchdog_.finished(id);
    return failed(what, peers, r);
  }
  if (auto e = driver_.launchHost(
          [w, id, trace, span] {
            w->finished(id);
            if (span) {
              span->durationUs = trace->nowUs() - span->beginUs;
              trace->add(*span);
            }
            return llvm::Error::success();
          },
          stream_))
    return e;
  if (!compute_)
    return driver_.synchronize(stream_);
  if (!joinCompute)
    return llvm::Error::success();
  if (auto e = driver_.record(after_, stream_))
    return e;
  return driver_.wait(compute_, after_);
}

llvm::Error NcclCommunicator::allReduce(void *buf, int64_t count, DType dt,
                                        ReduceOp op) {
  return allReduce(buf, buf, count, dt, op);
}

llvm::Error NcclCommunicator::allReduce(const void *in, void *out,
                                        int64_t count, DType dt, ReduceOp op) {
  return run("all_reduce", -1, true, count * dtypeBytes(dt),
             [&](StreamHandle s) {
               return nccl_.allReduce(in, out, size_t(count), ncclType(dt),
                                      redOp(op), comm_, s);
             });
}

llvm::Error NcclCommunicator::allGather(const void *in, void *out,
                                        int64_t count, DType dt) {
  return run("all_gather", -1, true, size_ * count * dtypeBytes(dt),
             [&](StreamHandle s) {
               return nccl_.allGather(in, out, size_t(count), ncclType(dt),
                                      comm_, s);
             });
}

llvm::Error NcclCommunicator::reduceScatter(const void *in, void *out,
                                            int64_t count, DType dt,
                                            ReduceOp op) {
  return run("reduce_scatter", -1, true, size_ * count * dtypeBytes(dt),
             [&](StreamHandle s) {
               return nccl_.reduceScatter(in, out, size_t(count), ncclType(dt),
                                          redOp(op), comm_, s);
             });
}

llvm::Error NcclCommunicator::allToAll(const void *in, void *out, int64_t count,
                                       DType dt) {
  int64_t blk = count * dtypeBytes(dt);
  return run("all_to_all", -1, true, size_ * blk, [&](StreamHandle s) {
    if (NcclResult r = nccl_.groupStart(); r != ncclSuccess)
      return r;
    NcclResult first = ncclSuccess;
    for (int64_t j = 0; j < size_; ++j) {
      const char *x = static_cast<const char *>(in) + j * blk;
      char *y = static_cast<char *>(out) + j * blk;
      NcclResult r =
          j == rank_
              ? (driver_.copyOnDevice(DevicePtr(y), DevicePtr(x), blk, s)
                     ? ncclUnhandledCudaError
                     : ncclSuccess)
              : nccl_.send(x, size_t(count), ncclType(dt), int(j), comm_, s);
      if (j != rank_ && r == ncclSuccess)
        r = nccl_.recv(y, size_t(count), ncclType(dt), int(j), comm_, s);
      if (first == ncclSuccess)
        first = r;
    }
    NcclResult end = nccl_.groupEnd(); // ncclInProgress: run() polls
    return first != ncclSuccess ? first : end;
  });
}

llvm::Error NcclCommunicator::broadcast(void *buf, int64_t count, DType dt,
                                        int64_t root) {
  if (root < 0 || root >= size_)
    return err("broadcast: root " + llvm::Twine(root) + " is not in " + name_);
  return run("broadcast", root == rank_ ? -1 : root, true,
             count * dtypeBytes(dt), [&](StreamHandle s) {
               return nccl_.broadcast(buf, buf, size_t(count), ncclType(dt),
                                      int(root), comm_, s);
             });
}

llvm::Error NcclCommunicator::send(const void *buf, int64_t count, DType dt,
                                   int64_t peer, uint32_t) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    return err("send: peer " + llvm::Twine(peer) + " is not another rank of " +
               name_);
  return run("send", peer, true, count * dtypeBytes(dt), [&](StreamHandle s) {
    return nccl_.send(buf, size_t(count), ncclType(dt), int(peer), comm_, s);
  });
}

llvm::Error NcclCommunicator::recv(void *buf, int64_t count, DType dt,
                                   int64_t peer, uint32_t) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    return err("recv: peer " + llvm::Twine(peer) + " is not another rank of " +
               name_);
  return run("recv", peer, true, count * dtypeBytes(dt), [&](StreamHandle s) {
    return nccl_.recv(buf, size_t(count), ncclType(dt), int(peer), comm_, s);
  });
}

llvm::Error NcclCommunicator::postSend(const void *buf, int64_t count, DType dt,
                                       int64_t peer, uint32_t tag) {
  if (!compute_)
    return send(buf, count, dt, peer, tag);
  if (peer < 0 || peer >= size_ || peer == rank_)
    return err("send: peer " + llvm::Twine(peer) + " is not another rank of " +
               name_);
  int64_t bytes = count * dtypeBytes(dt);
  collectDone();
  auto staging = take(bytes, nullptr, true);
  if (!staging)
    return staging.takeError();
  if (auto e = driver_.copyOnDevice(*staging, DevicePtr(buf), bytes, compute_))
    return e;
  const void *p = reinterpret_cast<const void *>(*staging);
  if (auto e = run("send", peer, false, bytes, [&](StreamHandle s) {
        return nccl_.send(p, size_t(count), ncclType(dt), int(peer), comm_, s);
      }))
    return e;
  // The communication stream reaches this once the send is done.
  return driver_.launchHost(
      [done = done_, ptr = *staging] {
        std::lock_guard<std::mutex> lock(done->mu);
        done->ptrs.push_back(ptr);
        return llvm::Error::success();
      },
      stream_);
}

llvm::Expected<DevicePtr> NcclCommunicator::scratch(int64_t bytes,
                                                    StreamHandle stream) {
  return take(bytes, stream, false);
}

void NcclCommunicator::recycle(DevicePtr p, StreamHandle stream) {
  for (size_t i = 0; i < held_.size(); ++i)
    if (held_[i].ptr == p) {
      held_[i].stream = stream;
      free_.push_back(held_[i]);
      held_.erase(held_.begin() + i);
      return;
    }
}

llvm::Expected<DevicePtr>
NcclCommunicator::take(int64_t bytes, StreamHandle stream, bool staging) {
  for (size_t i = 0; i < free_.size(); ++i) {
    const Buffer &b = free_[i];
    if (b.bytes == bytes && b.staging == staging &&
        (!b.stream || b.stream == stream)) {
      held_.push_back(b);
      free_.erase(free_.begin() + i);
      return held_.back().ptr;
    }
  }
  auto p = driver_.allocate(bytes);
  if (!p)
    return p.takeError();
  held_.push_back({*p, bytes, nullptr, staging});
  return *p;
}

void NcclCommunicator::collectDone() {
  std::vector<DevicePtr> done;
  {
    std::lock_guard<std::mutex> lock(done_->mu);
    done.swap(done_->ptrs);
  }
  for (DevicePtr p : done)
    recycle(p, nullptr);
}

llvm::Error NcclCommunicator::release() {
  llvm::Error e = driver_.synchronize(stream_);
  if (e) // a call failed on the stream (interpret mode: a Gloo error)
    e = err("NCCL over group " + name_ + ": " + llvm::toString(std::move(e)));
  collectDone();
  // Every use is done: kept for any stream's next messages of the sizes.
  free_.insert(free_.end(), held_.begin(), held_.end());
  held_.clear();
  for (Buffer &b : free_)
    b.stream = nullptr;
  return e;
}

} // namespace strata::cuda
