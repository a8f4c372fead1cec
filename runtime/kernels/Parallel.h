//===- Parallel.h - Thread-count knob and parallelFor for CPU kernels -----===//
//
// Every multi-threaded kernel in strata::kernels goes through parallelFor, so
// one global knob (setNumThreads / env STRATA_NUM_THREADS) bounds the CPU
// parallelism of the whole library, GEMMs included (OpenBLAS itself runs
// single-threaded; matmul() splits GEMMs into tiles through parallelFor).
//
// Implementation choice: OpenMP (see Parallel.cpp). It keeps a persistent
// thread team, so a parallelFor costs a fork/join of a few microseconds rather
// than spawning threads, and a parallelFor nested inside another one runs
// serially (OpenMP's default max-active-levels of 1) instead of
// oversubscribing. A hand-written std::thread pool would have to re-implement
// both. OpenMP is a private detail of Parallel.cpp; this header is plain C++.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>

namespace strata::kernels {

/// Sets the number of threads kernels may use (clamped to >= 1), GEMMs
/// included. A process that runs
/// several ranks as threads, each calling kernels, should give each a share
/// (cores / ranks): every calling thread gets its own team of this size.
void setNumThreads(int n);

/// The current thread count. Defaults to $STRATA_NUM_THREADS when set to a
/// positive integer, else std::thread::hardware_concurrency().
int getNumThreads();

/// Runs fn(lo, hi) over disjoint chunks [lo, hi) covering [begin, end).
/// Chunks hold at least `grain` iterations (except possibly the last), so
/// small loops run inline on the calling thread. The chunking is a function of
/// (begin, end, grain, thread count) only; kernels whose result must not
/// depend on the thread count never reduce across chunks.
void parallelFor(int64_t begin, int64_t end, int64_t grain,
                 const std::function<void(int64_t lo, int64_t hi)> &fn);

} // namespace strata::kernels
