//===- Bf16GemmBench.cpp - Two ways to run a bf16 GEMM on the CPU ---------===//
//
// The shapes of gpt_tiny's and a GPT-2 124M-shaped model's matmuls
// (tokens x hidden x out), bf16 A and B, fp32 accumulation, bf16 C:
//   F32       the f32 GEMM alone (the baseline)
//   Convert   widen A and B to f32, strata's f32 GEMM (libxsmm JIT tiles),
//             round C: what runtime/cpu does (CpuOpKernels' runWidened)
//   Xsmm      libxsmm 1.17's bf16 kernel (libxsmm_bsmmdispatch, f32 out),
//             one call over the whole matrices, then round C (skipped
//             where it cannot JIT one)
// OpenBLAS's cblas_sbgemm is the third way, but Debian builds OpenBLAS
// 0.3.21 without BUILD_BFLOAT16: cblas.h declares it, libopenblas.so.0 has
// no such symbol.
// Run: build/bench/bf16_gemm_bench --benchmark_min_time=0.5
// docs/mixed-precision.md has the numbers of the machine the choice was
// made on.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Float16.h"
#include "runtime/kernels/MatMul.h"

#include <benchmark/benchmark.h>
#include <libxsmm.h>

#include <random>
#include <vector>

namespace k = strata::kernels;

namespace {
struct Problem {
  int64_t M, N, K;
  std::vector<uint16_t> A, B, C;
  explicit Problem(const benchmark::State &s)
      : M(s.range(0)), N(s.range(2)), K(s.range(1)), A(M * K), B(K * N),
        C(M * N) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d;
    for (auto &x : A)
      x = k::floatToBf16(d(rng));
    for (auto &x : B)
      x = k::floatToBf16(d(rng));
  }
};

void flops(benchmark::State &s, const Problem &p) {
  s.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * p.M * p.N * p.K, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void Convert(benchmark::State &s) {
  Problem p(s);
  std::vector<float> a(p.M * p.K), b(p.K * p.N), c(p.M * p.N);
  k::GemmArgs g;
  g.M = p.M, g.N = p.N, g.K = p.K;
  for (auto _ : s) {
    k::bf16ToFloat(p.A.data(), a.data(), p.M * p.K);
    k::bf16ToFloat(p.B.data(), b.data(), p.K * p.N);
    k::matmul(a.data(), b.data(), c.data(), g);
    k::floatToBf16(c.data(), p.C.data(), p.M * p.N);
  }
  flops(s, p);
}

// The f32 GEMM alone: what the widening costs on top of it.
void F32(benchmark::State &s) {
  Problem p(s);
  std::vector<float> a(p.M * p.K, 0.5f), b(p.K * p.N, 0.25f), c(p.M * p.N);
  k::GemmArgs g;
  g.M = p.M, g.N = p.N, g.K = p.K;
  for (auto _ : s)
    k::matmul(a.data(), b.data(), c.data(), g);
  flops(s, p);
}

void Xsmm(benchmark::State &s) {
  Problem p(s);
  // Column-major C = A * B with libxsmm's operands swapped (row-major).
  libxsmm_blasint m = p.N, n = p.M, kk = p.K;
  libxsmm_bsmmfunction f = libxsmm_bsmmdispatch(
      m, n, kk, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (!f) {
    s.SkipWithError("libxsmm has no bf16 kernel for this CPU and shape");
    return;
  }
  std::vector<float> c(p.M * p.N);
  for (auto _ : s) {
    f(reinterpret_cast<const libxsmm_bfloat16 *>(p.B.data()),
      reinterpret_cast<const libxsmm_bfloat16 *>(p.A.data()), c.data());
    k::floatToBf16(c.data(), p.C.data(), p.M * p.N);
  }
  flops(s, p);
}

// {tokens, hidden, out}: gpt_tiny's fc1 (768 x 128 x 512) and a
// GPT-2-124M-shaped fc1 at 8 x 128 tokens (1024 x 768 x 3072).
void shapes(benchmark::internal::Benchmark *b) {
  b->Args({768, 128, 512})->Args({1024, 768, 3072})->UseRealTime();
}
} // namespace

BENCHMARK(F32)->Apply(shapes);
BENCHMARK(Convert)->Apply(shapes);
BENCHMARK(Xsmm)->Apply(shapes);
BENCHMARK_MAIN();
