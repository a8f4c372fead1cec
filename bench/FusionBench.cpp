//===- FusionBench.cpp - The microbatch step with and without fusion ------===//
//
// Google Benchmark: one forward + backward of a model's microbatch graph on
// the CPU device (Executable::run, inputs already on the device), in three
// builds of the graph: unfused, fused without row ops (`fusion{rows=false}`:
// elementwise chains, matmul epilogues, column sums) and fused. The ratio
// of the last two is what row-op fusion (softmax / norm prologues and
// epilogues) saves. Times are wall-clock (the calling thread only waits
// for the device's). Run:
//   build/bench/fusion_bench --benchmark_repetitions=10 \
//       --benchmark_enable_random_interleaving=true
// (interleaved repetitions: a shared machine's speed drifts over seconds)
// with the environment bench/cpu_speed.sh sets (OPENBLAS_CORETYPE,
// STRATA_NUM_THREADS).
//
//===----------------------------------------------------------------------===//
#include "frontends/Models.h"
#include "passes/autodiff/Autodiff.h"
#include "passes/fusion/Fusion.h"
#include "runtime/Executable.h"
#include "runtime/cpu/CpuDevice.h"

#include <benchmark/benchmark.h>

#include <random>

namespace strata {
namespace {

enum class Build { Unfused, NoRowOps, Fused };

Graph microbatchGraph(const char *example, Build build) {
  auto spec = loadModelSpec(std::string(STRATA_EXAMPLES_DIR) + "/" + example +
                            ".textproto");
  if (!spec)
    llvm::report_fatal_error(llvm::StringRef(toString(spec.takeError())));
  Graph g = buildModelGraph(resolveModelSpec(*spec));
  if (auto e = differentiate(g))
    llvm::report_fatal_error(llvm::StringRef(toString(std::move(e))));
  FusionOptions options;
  options.rowOps = build == Build::Fused;
  if (build != Build::Unfused)
    fuseGraph(g, options);
  return g;
}

void BM_Microbatch(benchmark::State &state, const char *example, Build build) {
  Graph g = microbatchGraph(example, build);
  CpuDevice cpu;
  auto interp = Executable::create(g, cpu);
  if (!interp)
    llvm::report_fatal_error(llvm::StringRef(toString(interp.takeError())));
  // Parameters ~N(0, 0.02) like a fresh model; tokens and labels in range.
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<void *> inputs;
  std::vector<HostTensor> host; // alive until the copies are done
  for (ValueId v : g.inputs()) {
    const TensorType &t = g.type(v);
    HostTensor &h = host.emplace_back(t);
    for (int64_t i = 0; i < h.numElements(); ++i)
      h.set(i, isFloat(t.dtype) ? normal(rng) : double(i % 61));
    inputs.push_back(cpu.allocate(h.bytes()));
    cpu.copyFromHost(inputs.back(), h.raw(), h.bytes());
  }
  if (auto e = cpu.synchronize())
    llvm::report_fatal_error(llvm::StringRef(toString(std::move(e))));
  std::vector<const void *> in(inputs.begin(), inputs.end());
  std::vector<void *> out;
  for (auto _ : state)
    if (auto e = (*interp)->run(in, out))
      llvm::report_fatal_error(llvm::StringRef(toString(std::move(e))));
  int64_t fused = llvm::count_if(
      g.nodes(), [](const Node &n) { return n.op == OpKind::Fused; });
  state.counters["nodes"] = double(g.nodes().size());
  state.counters["fused"] = double(fused);
  for (void *d : inputs)
    cpu.deallocate(d);
}

} // namespace
} // namespace strata

int main(int argc, char **argv) {
  using strata::Build;
  for (const char *model : {"gpt_tiny", "llama_tiny"})
    for (auto [name, build] : {std::pair{"unfused", Build::Unfused},
                               std::pair{"no_row_ops", Build::NoRowOps},
                               std::pair{"fused", Build::Fused}})
      benchmark::RegisterBenchmark(
          ("BM_Microbatch/" + std::string(model) + "_" + name).c_str(),
          [model, build](benchmark::State &state) {
            strata::BM_Microbatch(state, model, build);
          })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
