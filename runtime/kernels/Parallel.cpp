//===- Parallel.cpp - OpenMP-backed parallelFor ---------------------------===//
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <cstdlib>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace strata::kernels {
namespace {

int defaultNumThreads() {
  if (const char *env = std::getenv("STRATA_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0)
      return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// OpenBLAS runs single-threaded: matmul() cuts GEMMs into tiles across
// parallelFor's threads itself. OpenBLAS's own pthreads pool busy-waits with
// sched_yield between calls and fought the OpenMP workers for the cores
// (gpt_tiny, 2 threads: ~30% of all cycles in sched_yield).
void singleThreadedBlas() {
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
#endif
}

std::atomic<int> &numThreadsSlot() {
  static std::atomic<int> slot{[] {
    singleThreadedBlas();
    return defaultNumThreads();
  }()};
  return slot;
}

} // namespace

void setNumThreads(int n) {
  n = std::max(n, 1);
  numThreadsSlot().store(n, std::memory_order_relaxed);
}

int getNumThreads() { return numThreadsSlot().load(std::memory_order_relaxed); }

void parallelFor(int64_t begin, int64_t end, int64_t grain,
                 const std::function<void(int64_t, int64_t)> &fn) {
  if (end <= begin)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t total = end - begin;
  int64_t maxChunks = (total + grain - 1) / grain;
  int64_t nChunks = std::min<int64_t>(maxChunks, getNumThreads());
#ifdef _OPENMP
  if (omp_in_parallel())
    nChunks = 1; // Nested call: the outer loop already uses the threads.
#endif
  if (nChunks <= 1) {
    fn(begin, end);
    return;
  }
  // One contiguous chunk per thread: the per-chunk work in these kernels is
  // uniform enough (rows of equal length, heads of equal size) that static
  // scheduling balances well and keeps each thread's memory contiguous.
  int64_t chunk = (total + nChunks - 1) / nChunks;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nChunks) schedule(static, 1)
#endif
  for (int64_t c = 0; c < nChunks; ++c) {
    int64_t lo = begin + c * chunk;
    int64_t hi = std::min(end, lo + chunk);
    if (lo < hi)
      fn(lo, hi);
  }
}

} // namespace strata::kernels
