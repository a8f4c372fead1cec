//===- Calibrate.cpp - Measure this machine's CPU backend -----------------===//
#include "perf/Calibrate.h"

#include "frontends/Models.h"
#include "ir/Builder.h"
#include "ir/Op.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/GraphCopy.h"
#include "passes/pipeline/ParallelCompile.h"
#include "perf/OpTime.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/kernels/Attention.h"
#include "runtime/kernels/MatMul.h"
#include "runtime/kernels/Parallel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <vector>

namespace strata {

namespace {
using Clock = std::chrono::steady_clock;

CalibrationGrid gridFor(bool quick) {
  if (quick)
    return {{64, 256, 1024},
            {32, 128, 512},
            {{64, 32}, {256, 64}},
            int64_t(1) << 20,
            {int64_t(48) << 10, int64_t(768) << 10, int64_t(12) << 20},
            0.008,
            0.3e9};
  // GEMM sizes at half octaves from 256: a CPU GEMM's rate is not smooth
  // in the shape (the BLAS picks its kernel and blocking by shape; a
  // 768 x 512 x 128 ran at 126 GFLOP/s where 1024 rows ran at 172 and 256
  // at 160 on this project's 2-core machine), so log interpolation over
  // whole octaves missed by up to 30%. Shapes over 1 GFLOP (at the peak
  // rate, and smooth) take the nearest sample's rate (perf/OpTime.h).
  return {{16, 64, 256, 384, 512, 768, 1024, 1536, 2048, 4096},
          {32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048},
          {{64, 32}, {64, 64}, {128, 64}, {256, 64}, {512, 64}, {1024, 128}},
          int64_t(1) << 20,
          {int64_t(12) << 10, int64_t(48) << 10, int64_t(192) << 10,
           int64_t(768) << 10, int64_t(3) << 20, int64_t(12) << 20,
           int64_t(48) << 20, int64_t(192) << 20},
          0.02,
          1e9};
}

void fillRandom(std::vector<float> &v) {
  uint32_t s = 12345;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1 << 24) - 0.5f;
  }
}

/// A buffer of `t` holding ones (valid token ids, an optimizer step).
std::vector<char> ones(const TensorType &t) {
  std::vector<char> b(size_t(t.bytes()) + 64, 0);
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    char *p = b.data() + i * dtypeBytes(t.dtype);
    switch (t.dtype) {
    case DType::F32:
      *reinterpret_cast<float *>(p) = 1.0f;
      break;
    case DType::F64:
      *reinterpret_cast<double *>(p) = 1.0;
      break;
    case DType::I32:
      *reinterpret_cast<int32_t *>(p) = 1;
      break;
    case DType::I64:
      *reinterpret_cast<int64_t *>(p) = 1;
      break;
    case DType::BF16:
    case DType::F16:
      *reinterpret_cast<uint16_t *>(p) =
          t.dtype == DType::BF16 ? 0x3F80 : 0x3C00;
      break;
    case DType::I1:
      *p = 1;
      break;
    }
  }
  return b;
}

/// Seconds of one run of `g` (inputs of ones) by an Executable on a
/// CpuDevice (the trainer's path), on each of `devices` at once.
llvm::Expected<double>
timeGraphRun(const Graph &g, llvm::ArrayRef<std::unique_ptr<CpuDevice>> devs,
             double budget) {
  int devices = int(devs.size());
  std::vector<std::unique_ptr<Executable>> exes;
  std::vector<std::vector<std::vector<char>>> in(devs.size());
  std::vector<std::vector<const void *>> ptrs(devs.size());
  for (size_t d = 0; d < devs.size(); ++d) {
    auto exe = Executable::create(g, *devs[d]);
    if (!exe)
      return exe.takeError();
    exes.push_back(std::move(*exe));
    for (ValueId v : g.inputs())
      in[d].push_back(ones(g.type(v)));
    for (auto &b : in[d])
      ptrs[d].push_back(b.data());
  }
  llvm::Error failed = llvm::Error::success();
  std::mutex mu;
  auto run = [&](int d) {
    std::vector<void *> outs;
    if (llvm::Error e = exes[size_t(d)]->run(ptrs[size_t(d)], outs)) {
      std::lock_guard<std::mutex> lock(mu);
      failed = llvm::joinErrors(std::move(failed), std::move(e));
    }
  };
  int64_t reps = repsFor(budget, [&] { run(0); });
  double s = concurrently(
      devices, [&](int d) { return timeCalls(reps, [&] { run(d); }); });
  if (failed)
    return std::move(failed);
  return s;
}

/// A graph of node `i` of `src` alone, its operands as inputs.
Graph nodeAlone(const Graph &src, size_t i) {
  const Node &n = src.nodes()[i];
  Graph g = emptyLike(src);
  GraphCopier copy(src, g);
  for (ValueId v : n.operands)
    if (copy.mapped(v) == kNoValue)
      copy.addInput(v);
  copy.copyNode(int32_t(i));
  for (ValueId r : n.results)
    g.addOutput(copy.mapped(r));
  return g;
}

/// The memory-bound kernels of a reference GPT block (gpt_tiny's sizes:
/// 768 rows of 128, an FFN of 512, AdamW) and of a Llama block of the same
/// rows (rms_norm, rope, silu, grouped-query attention with 2 KV heads,
/// untied head), compiled unfused and fused
/// (as `strata train` runs it), each node run alone on every device at
/// once: per key (opTableKey: the op, or a fused node's body ops), the sum
/// of the nodes' elements and of their seconds, less the executor's cost
/// of a run (a 1-element node's run, whose launch the model adds back per
/// node). A fused GEMM's entry is its epilogue: the fused node's time less
/// its GEMM's run alone. Plain GEMMs and attention have tables of their
/// own; reshapes, collectives and messages are not kernels here, nor nodes
/// under 4096 elements (mostly run overhead).
llvm::Expected<std::map<std::string, std::pair<double, double>>>
timeOpKinds(int devices, double budget) {
  ModelConfig gpt;
  gpt.family = pb::ModelSpec::GPT;
  gpt.name = "calibrate";
  gpt.vocab = 65, gpt.paddedVocab = 128, gpt.hidden = 128, gpt.layers = 1;
  gpt.heads = gpt.kvHeads = 4, gpt.headDim = 32, gpt.ffn = 512, gpt.seq = 64;
  gpt.microBatch = 12, gpt.tieEmbeddings = true, gpt.normEps = 1e-5;
  gpt.initStd = 0.02;
  ModelConfig llama = gpt;
  llama.family = pb::ModelSpec::LLAMA;
  llama.kvHeads = 2, llama.ffn = defaultFfn(llama.family, 128, 32);
  llama.ropeTheta = 10000, llama.tieEmbeddings = false;
  std::vector<std::unique_ptr<CpuDevice>> devs;
  for (int d = 0; d < devices; ++d)
    devs.push_back(std::make_unique<CpuDevice>(d));
  Graph one;
  ValueId x = one.addInput("x", TensorType{DType::F32, {1}});
  one.addOutput(Builder(one).scale(x, -1.0));
  auto overhead = timeGraphRun(one, devs, budget);
  if (!overhead)
    return overhead.takeError();
  std::map<std::string, std::pair<double, double>> kinds;
  for (auto [c, fusion] : {std::pair{&gpt, false}, std::pair{&gpt, true},
                           std::pair{&llama, false}, std::pair{&llama, true}}) {
    ParallelCompileOptions o;
    o.fusion = fusion;
    auto compiled = compilePipeline(buildModelGraph(*c), o);
    if (!compiled)
      return compiled.takeError();
    const PipelineStage &st = compiled->pipeline.stages.front();
    for (const Graph *src : std::initializer_list<const Graph *>{
             &st.forward, &st.backward,
             &compiled->pipeline.optimizers.front()}) {
      for (size_t i = 0; i < src->nodes().size(); ++i) {
        const Node &n = src->nodes()[i];
        if (n.op == OpKind::MatMul || n.op == OpKind::Attention ||
            n.op == OpKind::AttentionGrad || n.op == OpKind::Reshape ||
            n.op == OpKind::Send || n.op == OpKind::Recv ||
            isCollective(n.op) || (n.op == OpKind::Fused) != fusion)
          continue;
        double elements = largestTensorElements(*src, n);
        if (elements < 4096)
          continue;
        auto s = timeGraphRun(nodeAlone(*src, i), devs, budget);
        if (!s)
          return s.takeError();
        double seconds = *s - *overhead;
        const Graph *body = n.body.get();
        if (body && !body->nodes().empty() &&
            body->nodes().front().op == OpKind::MatMul) {
          auto gemm = timeGraphRun(nodeAlone(*body, 0), devs, budget);
          if (!gemm)
            return gemm.takeError();
          seconds = *s - *gemm;
        }
        auto &k = kinds[opTableKey(n)];
        k.first += elements;
        k.second += std::max(seconds, 0.0);
      }
    }
  }
  return kinds;
}

/// Seconds of one GEMM of the shape on each of `devices` threads at once.
double timeGemm(int devices, double budget, int64_t m, int64_t n, int64_t k,
                bool ta, bool tb) {
  kernels::GemmArgs g;
  g.M = m, g.N = n, g.K = k, g.transA = ta, g.transB = tb;
  std::vector<std::vector<float>> a(devices), b(devices), c(devices);
  for (int d = 0; d < devices; ++d) {
    a[d].resize(m * k), b[d].resize(k * n), c[d].resize(m * n);
    fillRandom(a[d]), fillRandom(b[d]);
  }
  int64_t reps = repsFor(budget, [&] {
    kernels::matmul(a[0].data(), b[0].data(), c[0].data(), g);
  });
  bool cpu = kernels::getNumThreads() == 1;
  return concurrently(devices, [&](int d) {
    return timeCalls(
        reps,
        [&] { kernels::matmul(a[d].data(), b[d].data(), c[d].data(), g); },
        cpu);
  });
}

/// Seconds of causal attention over `bh` heads, forward or backward.
double timeAttention(int devices, double budget, int64_t bh, int64_t s,
                     int64_t dh, bool backward) {
  kernels::AttentionDims dims;
  dims.B = bh, dims.S = s, dims.Hq = 1, dims.Hkv = 1, dims.D = dh;
  size_t n = size_t(bh * s * dh);
  struct Bufs {
    std::vector<float> q, k, v, o, dq, dk, dv;
  };
  std::vector<Bufs> bufs(devices);
  for (Bufs &x : bufs) {
    for (auto *v : {&x.q, &x.k, &x.v, &x.o, &x.dq, &x.dk, &x.dv})
      v->resize(n);
    fillRandom(x.q), fillRandom(x.k), fillRandom(x.v), fillRandom(x.o);
  }
  double scale = 1.0 / std::sqrt(double(dh));
  auto run = [&](Bufs &x) {
    if (backward)
      kernels::attentionBwd(x.o.data(), x.q.data(), x.k.data(), x.v.data(),
                            x.dq.data(), x.dk.data(), x.dv.data(), dims, true,
                            scale);
    else
      kernels::attentionFwd(x.q.data(), x.k.data(), x.v.data(), x.o.data(),
                            dims, true, scale);
  };
  int64_t reps = repsFor(budget, [&] { run(bufs[0]); });
  bool cpu = kernels::getNumThreads() == 1;
  return concurrently(devices, [&](int d) {
    return timeCalls(
        reps, [&] { run(bufs[d]); }, cpu);
  });
}

/// Seconds per node of a chain of `count` adds of `elements` floats run by
/// an Executable on a CpuDevice (one per concurrent device).
llvm::Expected<double> timeAddChain(int devices, double budget,
                                    int64_t elements, int count) {
  std::vector<std::unique_ptr<CpuDevice>> devs;
  for (int d = 0; d < devices; ++d)
    devs.push_back(std::make_unique<CpuDevice>(d));
  auto s = timeGraphRun(addChainGraph(elements, count), devs, budget);
  if (!s)
    return s.takeError();
  return *s / double(count);
}

} // namespace

Graph addChainGraph(int64_t elements, int count) {
  Graph g;
  TensorType t{DType::F32, {elements}};
  ValueId x = g.addInput("x", t), y = g.addInput("y", t);
  Builder b(g);
  for (int i = 0; i < count; ++i)
    x = b.add(x, y);
  g.addOutput(x);
  return g;
}

llvm::Expected<double>
measureGemms(const CalibrationGrid &grid, bool half, pb::Accelerator &a,
             llvm::function_ref<llvm::Expected<double>(const pb::GemmSample &)>
                 seconds) {
  double best = 0;
  const bool variants[3][2] = {{false, false}, {true, false}, {false, true}};
  for (auto &tt : variants)
    for (int64_t m : grid.rows)
      for (int64_t n : grid.cols)
        for (int64_t k : grid.cols) {
          double flops = 2.0 * double(m) * double(n) * double(k);
          if (flops > grid.maxGemmFlops)
            continue;
          pb::GemmSample g;
          g.set_m(m), g.set_n(n), g.set_k(k), g.set_half(half);
          g.set_transpose_a(tt[0]), g.set_transpose_b(tt[1]);
          auto s = seconds(g);
          if (!s)
            return s.takeError();
          g.set_seconds(*s);
          *a.add_gemm_table() = g;
          best = std::max(best, flops / *s);
        }
  return best;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void logProgress(llvm::raw_ostream &log, Clock::time_point start,
                 const llvm::Twine &message) {
  log << llvm::format("[%5.1f s] ", secondsSince(start)) << message << "\n";
  log.flush();
}

namespace {
double threadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}
} // namespace

double timeCalls(int64_t reps, const std::function<void()> &fn,
                 bool threadCpu) {
  fn();
  // The best of a few batches: other processes on the machine only ever
  // add time, so the fastest batch is the kernel's own.
  constexpr int64_t kBatches = 4;
  int64_t perBatch = std::max<int64_t>(1, reps / kBatches);
  double best = 0;
  for (int64_t b = 0; b < kBatches; ++b) {
    auto t0 = Clock::now();
    double c0 = threadCpu ? threadCpuSeconds() : 0;
    for (int64_t i = 0; i < perBatch; ++i)
      fn();
    double s = (threadCpu ? threadCpuSeconds() - c0 : secondsSince(t0)) /
               double(perBatch);
    best = b == 0 ? s : std::min(best, s);
  }
  return best;
}

int64_t repsFor(double budget, const std::function<void()> &fn) {
  fn();
  auto t0 = Clock::now();
  fn();
  double one = std::max(secondsSince(t0), 1e-7);
  return std::max<int64_t>(2, int64_t(budget / one));
}

double concurrently(int devices, const std::function<double(int)> &fn) {
  if (devices <= 1)
    return fn(0);
  std::vector<double> out(devices);
  std::vector<std::thread> threads;
  for (int d = 0; d < devices; ++d)
    threads.emplace_back([&, d] { out[d] = fn(d); });
  for (std::thread &t : threads)
    t.join();
  double sum = 0;
  for (double s : out)
    sum += s;
  return sum / double(devices);
}

llvm::Expected<pb::Hardware> calibrateCpu(const CalibrateOptions &o,
                                          llvm::raw_ostream &log) {
  auto t0 = Clock::now();
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  int threads =
      o.threadsPerDevice > 0 ? std::min(o.threadsPerDevice, cores) : cores;
  int devices = std::max(1, cores / threads);
  kernels::setNumThreads(threads);
  CalibrationGrid grid = gridFor(o.quick);
  pb::Hardware hw;
  hw.set_name(o.name);
  hw.set_devices_per_node(devices);
  hw.set_nodes(1);
  pb::Accelerator &a = *hw.mutable_accelerator();
  a.set_name("CPU device of " + std::to_string(threads) + " thread" +
             (threads == 1 ? "" : "s") + " (" + std::to_string(devices) +
             " on " + std::to_string(cores) + " cores)");
  a.set_multiprocessors(threads);
  a.set_gemm_tile_m(32);
  a.set_gemm_tile_n(32);
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  a.set_memory_bytes(int64_t(pages) * pageSize / devices);
  logProgress(log, t0,
              "calibrating " + llvm::Twine(devices) + " CPU device(s) of " +
                  llvm::Twine(threads) + " thread(s)" +
                  (o.quick ? " (quick)" : ""));

  auto best = measureGemms(
      grid, false, a, [&](const pb::GemmSample &g) -> llvm::Expected<double> {
        return timeGemm(devices, grid.budget, g.m(), g.n(), g.k(),
                        g.transpose_a(), g.transpose_b());
      });
  if (!best)
    return best.takeError();
  a.set_peak_f32_flops(*best);
  logProgress(log, t0,
              llvm::Twine(a.gemm_table_size()) + " GEMM shapes, best " +
                  llvm::formatv("{0:f1}", *best / 1e9).str() +
                  " GFLOP/s per device");

  for (auto [s, dh] : grid.attn) {
    // Enough heads for every thread to have work and ~1 M elements.
    int64_t bh = std::max<int64_t>(4 * threads, grid.attnElements / (s * dh));
    for (bool backward : {false, true}) {
      pb::AttentionSample *x = a.add_attention_table();
      x->set_batch_heads(bh), x->set_seq(s), x->set_head_dim(dh);
      x->set_backward(backward);
      x->set_seconds(timeAttention(devices, grid.budget, bh, s, dh, backward));
    }
  }
  logProgress(log, t0,
              llvm::Twine(a.attention_table_size()) + " attention samples");

  // Launch: the per-node cost of a chain of 1-element adds.
  constexpr int kChain = 64;
  auto launch = timeAddChain(devices, grid.budget, 1, kChain);
  if (!launch)
    return launch.takeError();
  a.set_kernel_launch_s(*launch);
  double bandwidth = 0;
  for (int64_t bytes : grid.bandwidthBytes) {
    // An add moves 3 tensors (two read, one written), each bytes / 3.
    int64_t elements = std::max<int64_t>(1, bytes / 12);
    auto s = timeAddChain(devices, grid.budget, elements, 16);
    if (!s)
      return s.takeError();
    double moved = 12.0 * double(elements);
    double seconds = std::max(*s - *launch, 1e-9);
    pb::BandwidthSample *b = a.add_bandwidth_table();
    b->set_bytes(moved), b->set_seconds(seconds);
    bandwidth = moved / seconds; // the largest working set: DRAM
  }
  a.set_memory_bandwidth(bandwidth);
  logProgress(log, t0,
              "launch " + llvm::formatv("{0:f2}", *launch * 1e6).str() +
                  " us per node, bandwidth " +
                  llvm::formatv("{0:f1}", bandwidth / 1e9).str() +
                  " GB/s at the largest working set");

  // Memory-bound kernels' compute: reference GPT and Llama nodes by op kind.
  auto kinds = timeOpKinds(devices, grid.budget / 4);
  if (!kinds)
    return kinds.takeError();
  for (const auto &[op, k] : *kinds) {
    pb::OpSample *x = a.add_op_table();
    x->set_op(op), x->set_elements(k.first), x->set_seconds(k.second);
  }
  log << llvm::format("[%5.1f s] ", secondsSince(t0)) << a.op_table_size()
      << " memory-bound op kinds (reference GPT and Llama nodes)\n";
  log.flush();

  if (llvm::Error e =
          calibrateCollectives(std::max(devices, 2), o.quick, hw, log))
    return std::move(e);
  logProgress(log, t0, "done");
  return hw;
}

} // namespace strata
