//===- CalibrateDevice.cpp - Measure an accelerator through its Device ----===//
#include "perf/CalibrateDevice.h"

#include "perf/Calibrate.h"

#include "ir/Builder.h"
#include "runtime/Executable.h"
#include "runtime/HostTensor.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace strata {

namespace {
using Clock = std::chrono::steady_clock;

CalibrationGrid gridFor(bool quick) {
  if (quick)
    return {{16, 64}, {16, 32}, {{16, 8}}, 256, {int64_t(12) << 10}, 0, 1e6};
  // A GPU: from one SM's tile to the GEMMs of a 175B model's layers, and
  // working sets from L2-resident to many times L2.
  return {{256, 1024, 4096, 16384},
          {256, 1024, 4096, 12288},
          {{512, 64}, {1024, 64}, {2048, 128}, {4096, 128}},
          int64_t(1) << 24,
          {int64_t(1) << 20, int64_t(8) << 20, int64_t(64) << 20,
           int64_t(512) << 20, int64_t(2) << 30},
          0.02,
          4e12};
}

/// Graph inputs on the device, filled with uniform values in [-0.5, 0.5)
/// (zeros would let a GPU draw less power than real data does).
class DeviceInputs {
public:
  explicit DeviceInputs(Device &d) : dev_(d) {}
  ~DeviceInputs() {
    for (void *p : buffers_)
      dev_.deallocate(p);
  }
  void add(const TensorType &t) {
    HostTensor h(t);
    uint32_t s = 12345 + uint32_t(buffers_.size());
    for (int64_t i = 0; i < h.numElements(); ++i) {
      s = s * 1664525u + 1013904223u;
      h.set(i, double(s >> 8) / double(1 << 24) - 0.5);
    }
    void *p = dev_.allocate(std::max<int64_t>(t.bytes(), 1));
    dev_.copyFromHost(p, h.raw(), t.bytes());
    buffers_.push_back(p);
    hosts_.push_back(std::move(h)); // the copy is asynchronous
  }
  std::vector<const void *> pointers() const {
    return {buffers_.begin(), buffers_.end()};
  }

private:
  Device &dev_;
  std::vector<void *> buffers_;
  std::vector<HostTensor> hosts_;
};

/// Seconds per run of `g` on `dev`: runs enqueued back to back, timed in
/// wall time around a synchronize, the fastest of a few batches (other
/// work on the machine only adds time).
llvm::Expected<double> timeGraph(Device &dev, const Graph &g, double budget) {
  auto exe = Executable::create(g, dev);
  if (!exe)
    return exe.takeError();
  DeviceInputs in(dev);
  for (ValueId v : g.inputs())
    in.add(g.type(v));
  std::vector<const void *> inputs = in.pointers();
  std::vector<void *> outputs;
  auto batch = [&](int64_t reps) -> llvm::Expected<double> {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < reps; ++i)
      if (auto e = (*exe)->enqueue(inputs, {}, nullptr, outputs, {}))
        return std::move(e);
    if (auto e = dev.synchronize())
      return std::move(e);
    return secondsSince(t0) / double(reps);
  };
  if (auto warm = batch(1); !warm) // prepares kernels, fills caches
    return warm.takeError();
  auto one = batch(1);
  if (!one)
    return one.takeError();
  int64_t reps =
      std::clamp<int64_t>(int64_t(budget / std::max(*one, 1e-7)), 1, 10000);
  double best = *one;
  for (int b = 0; b < 3; ++b) {
    auto s = batch(reps);
    if (!s)
      return s.takeError();
    best = std::min(best, *s);
  }
  return best;
}

Graph gemmGraph(DType dt, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  Graph g;
  TensorType at{dt, ta ? Shape{k, m} : Shape{m, k}},
      bt{dt, tb ? Shape{n, k} : Shape{k, n}};
  ValueId a = g.addInput("a", at), b = g.addInput("b", bt);
  g.addOutput(Builder(g).matmul(a, b, ta, tb));
  return g;
}

Graph attentionGraph(DType dt, int64_t bh, int64_t s, int64_t d,
                     bool backward) {
  Graph g;
  TensorType t{dt, {bh, s, 1, d}};
  Attrs attrs{{"causal", true}, {"scale", 1.0 / std::sqrt(double(d))}};
  Builder b(g);
  if (backward) {
    ValueId dout = g.addInput("dout", t), q = g.addInput("q", t),
            k = g.addInput("k", t), v = g.addInput("v", t);
    for (ValueId r : b.create(OpKind::AttentionGrad, {dout, q, k, v}, attrs))
      g.addOutput(r);
  } else {
    ValueId q = g.addInput("q", t), k = g.addInput("k", t),
            v = g.addInput("v", t);
    g.addOutput(b.create1(OpKind::Attention, {q, k, v}, attrs));
  }
  return g;
}

} // namespace

llvm::Expected<pb::Hardware> calibrateDevice(Device &dev,
                                             const pb::Hardware &base,
                                             const DeviceCalibrateOptions &o,
                                             llvm::raw_ostream &log) {
  auto t0 = Clock::now();
  CalibrationGrid grid = gridFor(o.quick);
  pb::Hardware hw = base;
  hw.set_name(o.name);
  pb::Accelerator &a = *hw.mutable_accelerator();
  a.set_name(dev.name() + " (measured; links and tiles of " + base.name() +
             ")");
  a.clear_gemm_table(), a.clear_attention_table(), a.clear_bandwidth_table();
  if (std::optional<int64_t> free = dev.freeBytes())
    a.set_memory_bytes(*free);
  logProgress(log, t0,
              "calibrating " + dev.name() + (o.quick ? " (quick)" : "") +
                  "; the links come from " + base.name());

  for (bool half : {false, true}) {
    DType dt = half ? DType::BF16 : DType::F32;
    auto best = measureGemms(grid, half, a, [&](const pb::GemmSample &g) {
      return timeGraph(
          dev,
          gemmGraph(dt, g.m(), g.n(), g.k(), g.transpose_a(), g.transpose_b()),
          grid.budget);
    });
    if (!best)
      return best.takeError();
    half ? a.set_peak_bf16_flops(*best) : a.set_peak_f32_flops(*best);
    logProgress(log, t0,
                llvm::Twine(half ? "bf16" : "f32") + " GEMMs: best " +
                    llvm::formatv("{0:f3}", *best / 1e12).str() + " TFLOP/s");

    for (auto [s, d] : grid.attn)
      for (bool backward : {false, true}) {
        int64_t bh = std::max<int64_t>(1, grid.attnElements / (s * d));
        auto secs =
            timeGraph(dev, attentionGraph(dt, bh, s, d, backward), grid.budget);
        if (!secs)
          return secs.takeError();
        pb::AttentionSample *x = a.add_attention_table();
        x->set_batch_heads(bh), x->set_seq(s), x->set_head_dim(d);
        x->set_backward(backward), x->set_half(half);
        x->set_seconds(*secs);
      }
  }
  logProgress(log, t0,
              llvm::Twine(a.attention_table_size()) + " attention samples");

  // Launch: the per-node cost of a chain of 1-element adds.
  constexpr int kChain = 64;
  auto launch = timeGraph(dev, addChainGraph(1, kChain), grid.budget);
  if (!launch)
    return launch.takeError();
  a.set_kernel_launch_s(*launch / kChain);
  for (int64_t bytes : grid.bandwidthBytes) {
    // An add moves 3 tensors (two read, one written), each bytes / 3.
    int64_t elements = std::max<int64_t>(1, bytes / 12);
    constexpr int kAdds = 16;
    auto s = timeGraph(dev, addChainGraph(elements, kAdds), grid.budget);
    if (!s)
      return s.takeError();
    double moved = 12.0 * double(elements);
    double seconds = std::max(*s / kAdds - a.kernel_launch_s(), 1e-9);
    pb::BandwidthSample *b = a.add_bandwidth_table();
    b->set_bytes(moved), b->set_seconds(seconds);
    a.set_memory_bandwidth(moved / seconds); // the largest working set
  }
  logProgress(log, t0,
              "launch " +
                  llvm::formatv("{0:f2}", a.kernel_launch_s() * 1e6).str() +
                  " us per node, bandwidth " +
                  llvm::formatv("{0:f1}", a.memory_bandwidth() / 1e9).str() +
                  " GB/s at the largest working set");
  logProgress(log, t0, "done");
  return hw;
}

} // namespace strata
