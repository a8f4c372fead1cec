//===- Parallel.h - Thread-count knob and parallelFor for CPU kernels -----===//
//
// Every multi-threaded kernel in strata::kernels goes through parallelFor, so
// one global knob (setNumThreads / env STRATA_NUM_THREADS) bounds the CPU
// parallelism of the whole library, GEMMs included (OpenBLAS itself runs
// single-threaded; matmul() splits GEMMs into tiles through parallelFor).
//
// Implementation: a persistent pool per calling thread (Parallel.cpp), so a
// call costs a wake-up of spinning workers rather than spawning threads, and
// a parallelFor nested inside another one runs inline instead of
// oversubscribing. Workers claim chunks; the caller runs whatever is left
// and never waits for a worker that was not scheduled in time.
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
