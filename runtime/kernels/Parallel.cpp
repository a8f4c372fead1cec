//===- Parallel.cpp - parallelFor on a per-caller thread pool
//--------------===//
//
// A call cuts the range into fixed chunks (a function of the range, grain
// and thread count only) and publishes them; the calling thread and the
// pool's workers claim chunks from one atomic word until none are left, and
// the caller waits only for chunks that were claimed. A worker that wakes
// late (a busy machine, a sleeping worker) finds nothing to claim and costs
// nothing: with OpenMP's static schedule and join barrier every call waited
// for the slowest thread to be scheduled, ~100 us per call when another
// process held the other core.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define STRATA_PAUSE() _mm_pause()
#else
#define STRATA_PAUSE() std::this_thread::yield()
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
// sched_yield between calls and fought the workers for the cores
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

/// Idle workers spin this long for the next call before sleeping: a step's
/// kernels follow each other within microseconds, and a futex wake-up per
/// call would cost more than the short kernels themselves.
constexpr auto kSpin = std::chrono::microseconds(100);

/// True on pool workers, and on a caller while it runs a call's chunks:
/// parallelFor inside parallelFor runs inline.
thread_local bool inParallel = false;

/// The workers of one calling thread. The claim word holds the call's
/// generation (high 32 bits), its chunk count (bits 16-31) and the next
/// unclaimed chunk (bits 0-15), so a claim is one compare-and-swap and a
/// stale worker can never claim a chunk of a later call by mistake.
class Pool {
public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i)
      threads_.emplace_back([this] { workerLoop(); });
  }
  ~Pool() {
    stop_.store(true);
    gen_.fetch_add(1);
    wake();
    for (std::thread &t : threads_)
      t.join();
  }
  int workers() const { return int(threads_.size()); }

  /// Runs fn(c) for every c in [0, n), n < 65536, and returns when all ran.
  void run(int64_t n, const std::function<void(int64_t)> &fn) {
    uint32_t g = gen_.load(std::memory_order_relaxed) + 1;
    fn_.store(&fn, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    claim_.store(uint64_t(g) << 32 | uint64_t(n) << 16,
                 std::memory_order_release);
    gen_.store(g);
    if (sleepers_.load() > 0)
      wake();
    while (runOne())
      ;
    for (int spins = 0; done_.load(std::memory_order_acquire) < n; ++spins) {
      if (spins < 4096)
        STRATA_PAUSE();
      else
        std::this_thread::yield(); // the claimer was descheduled
    }
  }

private:
  /// Claims and runs one chunk of the current call; false if none is left.
  bool runOne() {
    uint64_t c = claim_.load(std::memory_order_acquire);
    while ((c & 0xffff) < ((c >> 16) & 0xffff)) {
      if (claim_.compare_exchange_weak(c, c + 1, std::memory_order_acquire)) {
        (*fn_.load(std::memory_order_relaxed))(int64_t(c & 0xffff));
        done_.fetch_add(1, std::memory_order_release);
        return true;
      }
    }
    return false;
  }

  /// Wakes sleeping workers. A worker counts itself in sleepers_ before it
  /// re-checks gen_ under mu_, so a new gen_ is either seen or notified.
  /// (A mutex, not std::atomic::wait: GCC 12's could miss this wake-up.)
  void wake() {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }

  void workerLoop() {
    inParallel = true;
    uint32_t seen = 0; // gen_ at construction: a late start misses no call

    while (true) {
      auto start = std::chrono::steady_clock::now();
      for (int spins = 0; gen_.load(std::memory_order_acquire) == seen;
           ++spins) {
        STRATA_PAUSE();
        if (spins % 64 == 63 &&
            std::chrono::steady_clock::now() - start > kSpin) {
          std::unique_lock<std::mutex> lock(mu_);
          sleepers_.fetch_add(1);
          cv_.wait(lock, [&] { return gen_.load() != seen; });
          sleepers_.fetch_sub(1);
        }
      }
      seen = gen_.load();
      if (stop_.load())
        return;
      while (runOne())
        ;
    }
  }

  std::vector<std::thread> threads_;
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<uint32_t> gen_{0};
  std::atomic<const std::function<void(int64_t)> *> fn_{nullptr};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

/// This thread's pool, with at least `workers` workers.
Pool &poolFor(int workers) {
  thread_local std::unique_ptr<Pool> pool;
  if (!pool || pool->workers() < workers) {
    pool.reset(); // joins the old workers first
    pool = std::make_unique<Pool>(workers);
  }
  return *pool;
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
  int64_t nChunks = std::min<int64_t>({maxChunks, getNumThreads(), 65535});
  if (inParallel)
    nChunks = 1; // Nested call: the outer loop already uses the threads.
  if (nChunks <= 1) {
    fn(begin, end);
    return;
  }
  // One contiguous chunk per thread: the per-chunk work in these kernels is
  // uniform enough (rows of equal length, heads of equal size) that equal
  // chunks balance well and keep each thread's memory contiguous.
  int64_t chunk = (total + nChunks - 1) / nChunks;
  inParallel = true;
  poolFor(int(nChunks) - 1).run(nChunks, [&](int64_t c) {
    int64_t lo = begin + c * chunk;
    int64_t hi = std::min(end, lo + chunk);
    if (lo < hi)
      fn(lo, hi);
  });
  inParallel = false;
}

} // namespace strata::kernels
