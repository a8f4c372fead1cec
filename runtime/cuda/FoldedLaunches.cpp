//===- FoldedLaunches.cpp - Launches the CUDA device reshapes -------------===//
//
// CudaDevice's launches that differ from one kernel per node:
//  - AdamW updates (and the clip muls they fold) deferred into one batched
//    launch (AdamWBatch.h), flushed before anything that may touch their
//    memory;
//  - 16-bit nodes run on f32 copies (Widen.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/AdamWBatch.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/Widen.h"

namespace strata {

llvm::Expected<void *> CudaDevice::widenScratch(cuda::StreamHandle s,
                                                int64_t bytes) {
  for (auto &w : widenScratch_)
    if (w.stream == s && w.bytes >= bytes)
      return reinterpret_cast<void *>(w.ptr);
  auto p = driver_->allocate(bytes);
  if (!p)
    return p.takeError();
  // A smaller buffer of the stream may still be read by queued work: it
  // stays until the device goes.
  for (auto &w : widenScratch_)
    if (w.stream == s)
      w.stream = nullptr;
  widenScratch_.push_back({s, *p, bytes});
  return reinterpret_cast<void *>(*p);
}

llvm::Error CudaDevice::reserveWiden(cuda::StreamHandle s, int64_t bytes) {
  if (bytes <= 0)
    return llvm::Error::success();
  bool replace = false;
  for (auto &w : widenScratch_) {
    if (w.stream == s && w.bytes >= bytes)
      return llvm::Error::success();
    replace |= w.stream == s;
  }
  if (replace) {
    if (auto e = driver_->synchronize(s))
      return e;
    for (auto &w : widenScratch_)
      if (w.stream == s)
        if (auto e = driver_->free(w.ptr))
          return e;
    llvm::erase_if(widenScratch_,
                   [&](const WidenBuffer &w) { return w.stream == s; });
  }
  auto p = driver_->allocate(bytes);
  if (!p)
    return p.takeError();
  widenScratch_.push_back({s, *p, bytes});
  return llvm::Error::success();
}

llvm::Error CudaDevice::launchWidened(const Graph &g, const Node &node,
                                      llvm::ArrayRef<const void *> operands,
                                      llvm::ArrayRef<void *> results,
                                      const LaunchContext &ctx,
                                      const Graph &body,
                                      cuda::OpLauncher launcher) {
  cuda::StreamHandle s = stream(ctx.stream);
  // f32 copies of the 16-bit operands and results.
  cuda::WidenLayout layout = cuda::widenLayout(g, node);
  const std::vector<int64_t> &offset = layout.offset;
  auto base = widenScratch(s, std::max<int64_t>(layout.bytes, 1));
  if (!base)
    return base.takeError();
  auto at = [&](size_t slot) {
    return static_cast<char *>(*base) + offset[slot];
  };
  std::vector<const void *> wops(operands.begin(), operands.end());
  std::vector<void *> wres(results.begin(), results.end());
  for (size_t k = 0; k < operands.size(); ++k) {
    if (offset[k] < 0)
      continue;
    const TensorType &t = g.type(node.operands[k]);
    wops[k] = at(k);
    if (auto e = cuda::widen(*opKernels_, s, t.dtype, operands[k], at(k),
                             t.numElements()))
      return e;
  }
  for (size_t r = 0; r < results.size(); ++r)
    if (offset[operands.size() + r] >= 0)
      wres[r] = at(operands.size() + r);
  llvm::Error e =
      launcher ? launcher({*opKernels_, body, body.node(0), wops, wres, ctx, s})
               : launchGenerated(node, wops, wres, ctx);
  if (e)
    return e;
  for (size_t r = 0; r < results.size(); ++r) {
    const TensorType &t = g.type(node.results[r]);
    if (offset[operands.size() + r] >= 0)
      if (auto e = cuda::narrow(*opKernels_, s, t.dtype, wres[r], results[r],
                                t.numElements()))
        return e;
  }
  return llvm::Error::success();
}

void CudaDevice::flushDeferred() {
  std::lock_guard<std::mutex> lock(adamwMu_);
  if (adamw_ && !adamw_->empty())
    note(adamw_->flush());
}

int64_t CudaDevice::adamwLaunches() const { return adamw_->launches(); }

} // namespace strata
