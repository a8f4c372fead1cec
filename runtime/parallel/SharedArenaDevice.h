//===- SharedArenaDevice.h - One workspace for a rank's programs ----------===//
//
// A pipeline rank runs its programs (F and B of each chunk, the optimizer)
// one at a time, and the pipeline trainer copies each run's outputs out
// (stash, gradient sums, new state) before the next run. So the programs
// can share one workspace, as passes/memory plans it (the arena of the
// running program, not the sum of all arenas).
//
// SharedArenaDevice forwards everything to the device underneath, except
// that every allocation up to `capacity` bytes returns the same buffer:
// Interpreter::create takes its arena from it. Bigger requests (and all of
// them when capacity is 0) get buffers of their own.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Device.h"

namespace strata {

class SharedArenaDevice : public Device {
public:
  SharedArenaDevice(Device &inner, int64_t capacity);
  ~SharedArenaDevice() override;

  /// Bytes of the shared buffer.
  int64_t capacity() const { return capacity_; }
  /// The largest allocation asked for so far.
  int64_t largestRequest() const { return largest_; }

  std::string name() const override { return inner_.name(); }
  bool supports(const Graph &g, const Node &n) const override {
    return inner_.supports(g, n);
  }
  llvm::Error prepare(const Graph &g) override { return inner_.prepare(g); }
  bool isHostMemory() const override { return inner_.isHostMemory(); }
  void *allocate(int64_t bytes) override;
  void deallocate(void *ptr) override;
  void copyFromHost(void *dst, const void *src, int64_t bytes) override {
    inner_.copyFromHost(dst, src, bytes);
  }
  void copyToHost(void *dst, const void *src, int64_t bytes) override {
    inner_.copyToHost(dst, src, bytes);
  }
  void fill(void *dst, int64_t bytes, int value) override {
    inner_.fill(dst, bytes, value);
  }
  void launch(const Graph &g, const Node &node,
              llvm::ArrayRef<const void *> operands,
              llvm::ArrayRef<void *> results,
              const LaunchContext &ctx) override {
    inner_.launch(g, node, operands, results, ctx);
  }
  llvm::Error synchronize() override { return inner_.synchronize(); }

private:
  Device &inner_;
  int64_t capacity_ = 0, largest_ = 0;
  void *shared_ = nullptr;
};

} // namespace strata
