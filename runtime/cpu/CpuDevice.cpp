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
struct CpuEvent : Event {
  HostEvent event;
};
} // namespace

CpuDevice::CpuDevice(int index) : index_(index) {}

CpuDevice::~CpuDevice() = default;

StreamId CpuDevice::createStream() { return streams_.createStream(); }

std::unique_ptr<Event> CpuDevice::createEvent() {
  return std::make_unique<CpuEvent>();
}

void CpuDevice::record(Event &event, StreamId stream) {
  streams_.record(static_cast<CpuEvent &>(event).event, stream);
}

void CpuDevice::wait(StreamId stream, Event &event) {
  streams_.wait(stream, static_cast<CpuEvent &>(event).event);
}

std::string CpuDevice::name() const { return "cpu:" + std::to_string(index_); }

bool CpuDevice::supports(const Graph &g, const Node &node) const {
  return cpuKernelSupports(g, node);
}

llvm::Expected<std::unique_ptr<KernelModule>>
CpuDevice::prepare(const Graph &g) {
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

void CpuDevice::enqueueScale(void *x, int64_t count, float factor,
                             StreamId stream) {
  enqueueHost(
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
  enqueueHost(
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
    return enqueueHost(std::move(work), ctx.stream);
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
    return enqueueHost(std::move(work), stream);
  enqueueHost(
      [this, name = std::move(name), category, bytes, stream,
       work = std::move(work)] {
        TraceScope scope(trace_, traceRank_,
                         "device stream " + std::to_string(stream), name,
                         category, bytes);
        return work();
      },
      stream);
}

void CpuDevice::enqueueHost(std::function<llvm::Error()> work,
                            StreamId stream) {
  streams_.push(stream, std::move(work));
}

llvm::Error CpuDevice::synchronize() { return streams_.synchronize(); }

} // namespace strata
