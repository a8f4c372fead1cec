//===- MatMulTest.cpp - Batched GEMM vs a naive triple loop
//----------------===//
#include "runtime/kernels/MatMul.h"

#include "runtime/kernels/Parallel.h"

#include "TestUtil.h"

#include <cstring>

using namespace strata::kernels;
using namespace strata::kernels::test;

namespace {

/// C[b] = alpha op(A[b]) op(B[b]) + beta C[b], straight from the definition.
std::vector<double> gemmRef(const std::vector<double> &A,
                            const std::vector<double> &B, std::vector<double> C,
                            const GemmArgs &g) {
  int64_t sA = g.strideA < 0 ? g.M * g.K : g.strideA;
  int64_t sB = g.strideB < 0 ? g.K * g.N : g.strideB;
  int64_t sC = g.strideC < 0 ? g.M * g.N : g.strideC;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < g.M; ++i)
      for (int64_t j = 0; j < g.N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < g.K; ++k) {
          double a =
              g.transA ? A[b * sA + k * g.M + i] : A[b * sA + i * g.K + k];
          double bb =
              g.transB ? B[b * sB + j * g.K + k] : B[b * sB + k * g.N + j];
          s += a * bb;
        }
        double &c = C[b * sC + i * g.N + j];
        c = g.alpha * s + g.beta * c;
      }
  return C;
}

void runCase(const GemmArgs &g, Rng &rng) {
  int64_t sA = g.strideA < 0 ? g.M * g.K : g.strideA;
  int64_t sB = g.strideB < 0 ? g.K * g.N : g.strideB;
  int64_t sC = g.strideC < 0 ? g.M * g.N : g.strideC;
  std::vector<double> A = rng.normal((g.batch - 1) * sA + g.M * g.K);
  std::vector<double> B = rng.normal((g.batch - 1) * sB + g.K * g.N);
  std::vector<double> C0 = rng.normal((g.batch - 1) * sC + g.M * g.N);
  std::vector<double> ref = gemmRef(A, B, C0, g);
  std::vector<double> C = C0;
  matmul(A.data(), B.data(), C.data(), g);
  std::string what = "gemm transA=" + std::to_string(g.transA) +
                     " transB=" + std::to_string(g.transB) +
                     " batch=" + std::to_string(g.batch) +
                     " strideB=" + std::to_string(g.strideB) +
                     " beta=" + std::to_string(g.beta);
  EXPECT_TRUE(allClose(what + " f64", C, ref, 1e-12, 1e-12));
  std::vector<float> Af = cast<float>(A), Bf = cast<float>(B),
                     Cf = cast<float>(C0);
  matmul(Af.data(), Bf.data(), Cf.data(), g);
  // float: K <= 17 products of O(1) normals; rounding ~ K * 6e-8 * |terms|.
  EXPECT_TRUE(allClose(what + " f32", Cf, ref, 1e-5, 1e-5));
}

TEST(MatMul, AllTransposeCombos) {
  Rng rng;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmArgs g;
      g.M = 5, g.N = 7, g.K = 3, g.transA = ta, g.transB = tb;
      runCase(g, rng);
    }
}

TEST(MatMul, BatchedSharedAndAccumulate) {
  Rng rng;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t strideB : {int64_t(-1), int64_t(0)})
        for (double beta : {0.0, 1.0}) {
          GemmArgs g;
          g.batch = 3, g.M = 4, g.N = 6, g.K = 17;
          g.transA = ta, g.transB = tb, g.strideB = strideB, g.beta = beta;
          g.alpha = 0.5;
          runCase(g, rng); // strideB 0 + !transA exercises the folded path
        }
}

TEST(MatMul, CustomStridesAndEmptyK) {
  Rng rng;
  GemmArgs g;
  g.batch = 2, g.M = 3, g.N = 2, g.K = 4;
  g.strideA = 20, g.strideB = 9, g.strideC = 7; // padded batch entries
  runCase(g, rng);
  GemmArgs e;
  e.M = 2, e.N = 2, e.K = 0, e.beta = 1.0;
  runCase(e, rng); // C = beta C
}

// GEMMs big enough to be cut into tiles across threads (matmul() splits
// the larger of M and N into 32-wide tiles of >= 2 MFLOP): every transpose,
// a folded batch and a per-entry batch. Each must match the reference, and
// be bitwise the same on 1 and 3 threads (tiles never split a dot product).
TEST(MatMul, TiledAcrossThreadsIsExactAndThreadCountFree) {
  Rng rng;
  int threads = getNumThreads();
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t shape : {0, 1, 2}) {
        GemmArgs g;
        g.transA = ta, g.transB = tb;
        // rows split (M > N), columns split (N > M), folded batch of 2.
        g.M = shape == 1 ? 40 : 300, g.N = shape == 1 ? 330 : 70, g.K = 200;
        if (shape == 2)
          g.batch = 2, g.strideB = ta ? -1 : 0;
        std::vector<double> A = rng.normal(g.batch * g.M * g.K),
                            B = rng.normal(g.batch * g.K * g.N);
        std::vector<double> ref =
            gemmRef(A, B, std::vector<double>(g.batch * g.M * g.N), g);
        std::vector<float> Af = cast<float>(A), Bf = cast<float>(B);
        std::vector<float> c1(ref.size()), c3(ref.size());
        setNumThreads(1);
        matmul(Af.data(), Bf.data(), c1.data(), g);
        setNumThreads(3);
        matmul(Af.data(), Bf.data(), c3.data(), g);
        // K = 200 products of unit normals: sums ~sqrt(200) = 14, and f32
        // accumulation adds ~K * 6e-8 relative of the partial sums at worst.
        EXPECT_TRUE(allClose("tiled gemm f32", c3, ref, 2e-4, 2e-4));
        EXPECT_EQ(std::memcmp(c1.data(), c3.data(), c1.size() * sizeof(float)),
                  0)
            << "transA=" << ta << " transB=" << tb << " shape " << shape;
      }
  setNumThreads(threads);
}

} // namespace
