//===- CpuDevice.cpp - A virtual CPU device with its own stream thread
//-----===//
#include "runtime/cpu/CpuDevice.h"

#include "runtime/Trace.h"
#include "runtime/cpu/FusedKernels.h"

#include "ir/Op.h"

#include "llvm/Support/ErrorHandling.h"

#include <cstdlib>
#include <cstring>

namespace strata {

namespace {
/// Records count up on the host; the stream marks them reached.
struct CpuEvent : Event {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0, reached = 0;
};
} // namespace

CpuDevice::CpuDevice(int index) : index_(index) { createStream(); }

CpuDevice::~CpuDevice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  for (auto &s : streams_) {
    s->workCv.notify_one();
    s->worker.join();
  }
}

StreamId CpuDevice::createStream() {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(std::make_unique<Stream>());
  Stream &s = *streams_.back();
  s.worker = std::thread([this, &s] { workerLoop(s); });
  return StreamId(streams_.size() - 1);
}

std::unique_ptr<Event> CpuDevice::createEvent() {
  return std::make_unique<CpuEvent>();
}

void CpuDevice::record(Event &event, StreamId stream) {
  auto &e = static_cast<CpuEvent &>(event);
  uint64_t mark;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    mark = ++e.recorded;
  }
  push(stream, {[&e, mark] {
                  {
                    std::lock_guard<std::mutex> lock(e.mu);
                    e.reached = std::max(e.reached, mark);
                  }
                  e.cv.notify_all();
                  return llvm::Error::success();
                },
                /*always=*/true});
}

void CpuDevice::wait(StreamId stream, Event &event) {
  auto &e = static_cast<CpuEvent &>(event);
  uint64_t mark;
  {
    std::lock_guard<std::mutex> lock(e.mu);
    mark = e.recorded;
  }
  push(stream, {[&e, mark] {
                  std::unique_lock<std::mutex> lock(e.mu);
                  e.cv.wait(lock, [&] { return e.reached >= mark; });
                  return llvm::Error::success();
                },
                /*always=*/true});
}

std::string CpuDevice::name() const { return "cpu:" + std::to_string(index_); }

bool CpuDevice::supports(const Graph &g, const Node &node) const {
  return cpuKernelSupports(g, node);
}

llvm::Error CpuDevice::prepare(const Graph &g) {
  return prepareFusedKernels(g);
}

void *CpuDevice::allocate(int64_t bytes) {
  size_t n = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, n ? n : 64);
  if (!p)
    llvm::report_fatal_error("cpu device: out of memory");
  return p;
}

void CpuDevice::deallocate(void *ptr) { std::free(ptr); }

void CpuDevice::enqueueCopy(CopyKind kind, void *dst, const void *src,
                            int64_t bytes, StreamId stream) {
  const char *what = kind == CopyKind::HostToDevice   ? "copy host to device"
                     : kind == CopyKind::DeviceToHost ? "copy device to host"
                                                      : "copy on device";
  enqueueTraced(
      what, "copy", bytes,
      [=] {
        std::memcpy(dst, src, bytes);
        return llvm::Error::success();
      },
      stream);
}

void CpuDevice::enqueueAccumulate(void *acc, const void *x, int64_t count,
                                  StreamId stream) {
  enqueue(
      [=] {
        float *a = static_cast<float *>(acc);
        const float *b = static_cast<const float *>(x);
        for (int64_t i = 0; i < count; ++i)
          a[i] += b[i];
        return llvm::Error::success();
      },
      stream);
}

void CpuDevice::enqueueScale(void *x, int64_t count, float factor,
                             StreamId stream) {
  enqueue(
      [=] {
        float *a = static_cast<float *>(x);
        for (int64_t i = 0; i < count; ++i)
          a[i] *= factor;
        return llvm::Error::success();
      },
      stream);
}

void CpuDevice::enqueueFill(void *dst, int64_t bytes, int value,
                            StreamId stream) {
  enqueue(
      [=] {
        std::memset(dst, value, bytes);
        return llvm::Error::success();
      },
      stream);
}

void CpuDevice::launch(const Graph &g, const Node &node,
                       llvm::ArrayRef<const void *> operands,
                       llvm::ArrayRef<void *> results,
                       const LaunchContext &ctx) {
  llvm::SmallVector<const void *, 8> ops(operands.begin(), operands.end());
  llvm::SmallVector<void *, 4> res(results.begin(), results.end());
  auto work = [&g, &node, ops, res, ctx] {
    return runCpuKernel(g, node, ops, res, ctx);
  };
  if (!trace_ || !isCollective(node.op))
    return enqueue(std::move(work), ctx.stream);
  // A collective's row in the trace: its op, group and bytes.
  std::string name = opName(node.op).str();
  if (node.attrs.has("peer"))
    name += " peer " + std::to_string(node.attrs.getInt("peer"));
  else
    for (const std::string &a : node.attrs.getStrings("axes"))
      name += " " + a;
  ValueId v = node.operands.empty() ? node.results[0] : node.operands[0];
  enqueueTraced(name, "collective", g.type(v).bytes(), std::move(work),
                ctx.stream);
}

void CpuDevice::enqueueTraced(std::string name, const char *category,
                              int64_t bytes, std::function<llvm::Error()> work,
                              StreamId stream) {
  if (!trace_)
    return enqueue(std::move(work), stream);
  enqueue(
      [this, name = std::move(name), category, bytes, stream,
       work = std::move(work)] {
        TraceScope scope(trace_, traceRank_,
                         "device stream " + std::to_string(stream), name,
                         category, bytes);
        return work();
      },
      stream);
}

void CpuDevice::enqueue(std::function<llvm::Error()> work, StreamId stream) {
  push(stream, {std::move(work), /*always=*/false});
}

void CpuDevice::push(StreamId stream, Work work) {
  Stream *s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream < 0 || size_t(stream) >= streams_.size())
      llvm::report_fatal_error("cpu device: no stream " + llvm::Twine(stream));
    s = streams_[stream].get();
    s->queue.push_back(std::move(work));
    ++pending_;
  }
  s->workCv.notify_one();
}

llvm::Error CpuDevice::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  doneCv_.wait(lock, [this] { return pending_ == 0; });
  if (firstError_.empty())
    return llvm::Error::success();
  std::string msg = std::move(firstError_);
  firstError_.clear();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

void CpuDevice::workerLoop(Stream &s) {
  while (true) {
    Work work;
    bool skip;
    {
      std::unique_lock<std::mutex> lock(mu_);
      s.workCv.wait(lock, [&] { return stop_ || !s.queue.empty(); });
      if (s.queue.empty())
        return; // stop_ and drained
      work = std::move(s.queue.front());
      s.queue.pop_front();
      // After an error the device is poisoned: later work is skipped, as
      // on a GPU after a fault, and synchronize() reports the first error.
      skip = !firstError_.empty() && !work.always;
    }
    llvm::Error e = skip ? llvm::Error::success() : work.fn();
    bool drained;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (e)
        firstError_ = llvm::toString(std::move(e));
      drained = --pending_ == 0;
    }
    if (drained)
      doneCv_.notify_all();
  }
}

} // namespace strata
