//===- CpuDevice.cpp - A virtual CPU device with its own stream thread -----===//
#include "runtime/cpu/CpuDevice.h"

#include "runtime/Trace.h"
#include "runtime/cpu/FusedKernels.h"

#include "ir/Op.h"

#include "llvm/Support/ErrorHandling.h"

#include <cstdlib>
#include <cstring>

namespace strata {

CpuDevice::CpuDevice(int index) : index_(index) {
  worker_ = std::thread([this] { workerLoop(); });
}

CpuDevice::~CpuDevice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  workCv_.notify_one();
  worker_.join();
}

std::string CpuDevice::name() const { return "cpu:" + std::to_string(index_); }

bool CpuDevice::supports(const Graph &g, const Node &node) const {
  return cpuKernelSupports(g, node);
}

llvm::Error CpuDevice::prepare(const Graph &g) { return prepareFusedKernels(g); }

void *CpuDevice::allocate(int64_t bytes) {
  size_t n = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, n ? n : 64);
  if (!p) llvm::report_fatal_error("cpu device: out of memory");
  return p;
}

void CpuDevice::deallocate(void *ptr) { std::free(ptr); }

void CpuDevice::enqueueCopy(const char *what, void *dst, const void *src,
                            int64_t bytes) {
  enqueueTraced(what, "copy", bytes, [=] {
    std::memcpy(dst, src, bytes);
    return llvm::Error::success();
  });
}

void CpuDevice::copyFromHost(void *dst, const void *src, int64_t bytes) {
  enqueueCopy("copy host to device", dst, src, bytes);
}

void CpuDevice::copyToHost(void *dst, const void *src, int64_t bytes) {
  enqueueCopy("copy device to host", dst, src, bytes);
}

void CpuDevice::copy(void *dst, const void *src, int64_t bytes) {
  enqueueCopy("copy on device", dst, src, bytes);
}

void CpuDevice::accumulate(void *acc, const void *x, int64_t count) {
  enqueue([=] {
    float *a = static_cast<float *>(acc);
    const float *b = static_cast<const float *>(x);
    for (int64_t i = 0; i < count; ++i)
      a[i] += b[i];
    return llvm::Error::success();
  });
}

void CpuDevice::scale(void *x, int64_t count, float factor) {
  enqueue([=] {
    float *a = static_cast<float *>(x);
    for (int64_t i = 0; i < count; ++i)
      a[i] *= factor;
    return llvm::Error::success();
  });
}

void CpuDevice::fill(void *dst, int64_t bytes, int value) {
  enqueue([=] {
    std::memset(dst, value, bytes);
    return llvm::Error::success();
  });
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
    return enqueue(std::move(work));
  // A collective's row in the trace: its op, group and bytes.
  std::string name = opName(node.op).str();
  if (node.attrs.has("peer"))
    name += " peer " + std::to_string(node.attrs.getInt("peer"));
  else
    for (const std::string &a : node.attrs.getStrings("axes"))
      name += " " + a;
  ValueId v = node.operands.empty() ? node.results[0] : node.operands[0];
  enqueueTraced(name, "collective", g.type(v).bytes(), std::move(work));
}

void CpuDevice::enqueueTraced(std::string name, const char *category,
                              int64_t bytes,
                              std::function<llvm::Error()> work) {
  if (!trace_)
    return enqueue(std::move(work));
  enqueue([this, name = std::move(name), category, bytes,
           work = std::move(work)] {
    TraceScope scope(trace_, traceRank_, "device stream", name, category,
                     bytes);
    return work();
  });
}

void CpuDevice::enqueue(std::function<llvm::Error()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    ++pending_;
  }
  workCv_.notify_one();
}

llvm::Error CpuDevice::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  doneCv_.wait(lock, [this] { return pending_ == 0; });
  if (firstError_.empty()) return llvm::Error::success();
  std::string msg = std::move(firstError_);
  firstError_.clear();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

void CpuDevice::workerLoop() {
  while (true) {
    std::function<llvm::Error()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      workCv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    // After an error the stream is poisoned: later work is skipped, as on a
    // GPU stream after a fault, and synchronize() reports the first error.
    bool skip;
    {
      std::lock_guard<std::mutex> lock(mu_);
      skip = !firstError_.empty();
    }
    llvm::Error e = skip ? llvm::Error::success() : work();
    bool drained;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (e) firstError_ = llvm::toString(std::move(e));
      drained = --pending_ == 0;
    }
    if (drained) doneCv_.notify_all();
  }
}

} // namespace strata
