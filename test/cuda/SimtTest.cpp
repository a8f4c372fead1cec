//===- SimtTest.cpp - Interpret mode runs CUDA C as a GPU would -----------===//
//
// Kernels in the backend's CUDA C dialect, run by the emulated driver
// (runtime/cuda/interpret): grid-stride loops, block reductions through
// __shared__ memory and __syncthreads, warp shuffles (xor, down, up, idx),
// a warp that shuffles while another has exited, 2-D blocks. Each result is
// checked against the same computation written on the host. The faults a
// GPU would show are reported: a divergent __syncthreads, an out-of-bounds
// store (off by one) with the kernel's name, reads of memory never written
// (poison), an invalid launch, a compile error.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/interpret/InterpretDriver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <malloc.h>
#include <numeric>
#include <unistd.h>
#include <vector>

namespace strata::cuda {
namespace {

/// The process's address space (/proc/self/statm's size), in bytes.
int64_t addressSpaceBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  statm >> pages;
  return pages * sysconf(_SC_PAGESIZE);
}

const char *kKernels = R"(
extern "C" __global__ void __launch_bounds__(128)
axpy(float *y, const float *x, float a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += blockDim.x * gridDim.x)
    y[i] += a * x[i];
}

// One block per row: sum through shared memory, tree order.
extern "C" __global__ void __launch_bounds__(256)
rowSums(const float *x, float *out, int cols) {
  __shared__ float part[256];
  float s = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    s += x[blockIdx.x * cols + c];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = part[0];
}

// Per warp: xor butterfly sum, down-shift and up-shift and broadcast.
extern "C" __global__ void shuffles(const int *x, int *xorSum, int *down,
                                    int *up, int *bcast) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  int s = v;
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  xorSum[i] = s;
  down[i] = __shfl_down_sync(0xffffffffu, v, 3);
  up[i] = __shfl_up_sync(0xffffffffu, v, 5);
  bcast[i] = __shfl_sync(0xffffffffu, v, 7);
}

// Warp 0 exits at once; warp 1 shuffles among its lanes only.
extern "C" __global__ void oneWarp(const double *x, double *out) {
  if (threadIdx.x < 32)
    return;
  double v = x[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 32)
    out[0] = v;
}

extern "C" __global__ void grid2d(int *out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * gridDim.x * blockDim.x + x] = 1000 * y + x;
}

extern "C" __global__ void divergentSync(float *x) {
  if (threadIdx.x < 16)
    __syncthreads();
  x[threadIdx.x] = 1;
}

extern "C" __global__ void offByOne(float *x, int n) {
  for (int i = threadIdx.x; i <= n; i += blockDim.x)
    x[i] = 2;
}

extern "C" __global__ void copyN(const float *x, float *y, int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    y[i] = x[i];
}
)";

class Simt : public testing::Test {
protected:
  void SetUp() override {
    driver = makeInterpretDriver();
    auto s = driver->createStream();
    ASSERT_TRUE(bool(s));
    stream = *s;
    auto m = driver->loadModule(kKernels, "simt_test.cu");
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    module = std::move(*m);
  }
  Function fn(const char *name) {
    auto f = driver->function(*module, name);
    EXPECT_TRUE(bool(f)) << llvm::toString(f.takeError());
    return f ? *f : nullptr;
  }
  template <typename T> DevicePtr upload(const std::vector<T> &host) {
    auto p = driver->allocate(int64_t(host.size() * sizeof(T)));
    EXPECT_TRUE(bool(p));
    EXPECT_FALSE(bool(driver->copyToDevice(
        *p, host.data(), int64_t(host.size() * sizeof(T)), stream)));
    // The copy runs on the stream: `host` may be a temporary.
    EXPECT_FALSE(bool(driver->synchronize(stream)));
    return *p;
  }
  template <typename T> std::vector<T> download(DevicePtr p, size_t n) {
    std::vector<T> host(n);
    EXPECT_FALSE(bool(
        driver->copyToHost(host.data(), p, int64_t(n * sizeof(T)), stream)));
    EXPECT_FALSE(bool(driver->synchronize(stream)));
    return host;
  }
  /// Launches and returns the stream's error text (empty: none).
  std::string run(const char *kernel, Dim3 grid, Dim3 block,
                  std::vector<void *> params) {
    if (auto e =
            driver->launch(fn(kernel), grid, block, 0, stream, params.data()))
      return llvm::toString(std::move(e));
    llvm::Error e = driver->synchronize(stream);
    return e ? llvm::toString(std::move(e)) : "";
  }

  std::unique_ptr<Driver> driver;
  StreamHandle stream = nullptr;
  std::unique_ptr<Module> module;
};

// A grid smaller than the data: the grid-stride loop covers every element.
TEST_F(Simt, GridStrideLoopCoversEveryElement) {
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i)
    x[i] = float(i), y[i] = float(2 * i);
  DevicePtr dx = upload(x), dy = upload(y);
  float a = 0.5f;
  int count = n;
  ASSERT_EQ(run("axpy", {3}, {128}, {&dy, &dx, &a, &count}), "");
  std::vector<float> got = download<float>(dy, n);
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(got[i], float(2 * i) + 0.5f * float(i)) << i;
}

// Shared memory and barriers: each block's tree sum equals the host's sum
// in the same order (exact: same operations, same order).
TEST_F(Simt, BlockReductionThroughSharedMemory) {
  const int rows = 5, cols = 700;
  std::vector<float> x(rows * cols);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(float(i)) * 3.0f;
  DevicePtr dx = upload(x), dout = upload(std::vector<float>(rows, 0));
  int c = cols;
  ASSERT_EQ(run("rowSums", {rows}, {256}, {&dx, &dout, &c}), "");
  std::vector<float> got = download<float>(dout, rows);
  for (int r = 0; r < rows; ++r) {
    std::vector<float> part(256, 0);
    for (int t = 0; t < 256; ++t)
      for (int k = t; k < cols; k += 256)
        part[t] += x[r * cols + k];
    for (int w = 128; w > 0; w /= 2)
      for (int t = 0; t < w; ++t)
        part[t] += part[t + w];
    EXPECT_EQ(got[r], part[0]) << "row " << r;
  }
}

// A host thread's fibers (stacks of 64 MiB of address space per kernel
// module) go when it exits: before, each stream thread that ran a
// synchronizing kernel left them mapped until the process ended. Address
// space, not malloc's counts: it is the same under ASan.
TEST_F(Simt, AStreamThreadsFibersAreFreedWhenItExits) {
  DevicePtr dx = upload(std::vector<float>(256, 1)),
            dy = upload(std::vector<float>(256, 0)),
            dout = upload(std::vector<float>(1, 0));
  int cols = 256, n = 256;
  float a = 1;
  // malloc's thread arenas take 64 MiB of address space each too, and are
  // kept after their thread: none is made from here on (glibc makes one
  // for a thread that finds the others locked), and a kernel without
  // fibers gives the stream thread its arena before the measure.
  mallopt(M_ARENA_MAX, 1);
  ASSERT_EQ(run("axpy", {1}, {128}, {&dy, &dx, &a, &n}), "");
  int64_t before = addressSpaceBytes();
  ASSERT_EQ(run("rowSums", {1}, {256}, {&dx, &dout, &cols}), "");
  EXPECT_EQ(download<float>(dout, 1)[0], 256.0f);
  const int64_t stacks = 64 << 20;
  int64_t running = addressSpaceBytes();
  // The measure sees the stacks (the test could fail).
  EXPECT_GE(running - before, stacks);
  driver.reset(); // joins the stream's thread
  EXPECT_LT(addressSpaceBytes() - before, stacks / 4);
}

// 80 threads: two full warps and one of 16 lanes.
TEST_F(Simt, WarpShufflesMoveValuesBetweenLanes) {
  const int n = 80;
  std::vector<int> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = i * i % 97;
  DevicePtr dx = upload(x);
  DevicePtr outs[4];
  for (DevicePtr &o : outs)
    o = upload(std::vector<int>(n, 0));
  ASSERT_EQ(
      run("shuffles", {1}, {n}, {&dx, &outs[0], &outs[1], &outs[2], &outs[3]}),
      "");
  std::vector<int> xorSum = download<int>(outs[0], n),
                   down = download<int>(outs[1], n),
                   up = download<int>(outs[2], n),
                   bcast = download<int>(outs[3], n);
  for (int i = 0; i < n; ++i) {
    int warp = i / 32, lo = warp * 32, hi = std::min(n, lo + 32);
    int lane = i - lo;
    // The xor butterfly over a partial warp: lanes whose partner is absent
    // keep their own value at that step.
    std::vector<int> s(x.begin() + lo, x.begin() + hi);
    for (int o = 16; o > 0; o >>= 1) {
      std::vector<int> next = s;
      for (int l = 0; l < int(s.size()); ++l)
        next[l] = s[l] + ((l ^ o) < int(s.size()) ? s[l ^ o] : s[l]);
      s = next;
    }
    EXPECT_EQ(xorSum[i], s[lane]) << i;
    EXPECT_EQ(down[i], lane + 3 < 32 && i + 3 < hi ? x[i + 3] : x[i]) << i;
    EXPECT_EQ(up[i], lane >= 5 ? x[i - 5] : x[i]) << i;
    EXPECT_EQ(bcast[i], lo + 7 < hi ? x[lo + 7] : x[i]) << i;
  }
}

TEST_F(Simt, AWarpShufflesWhileAnotherHasExited) {
  std::vector<double> x(64);
  std::iota(x.begin(), x.end(), 1.0);
  DevicePtr dx = upload(x), dout = upload(std::vector<double>(1, 0));
  ASSERT_EQ(run("oneWarp", {1}, {64}, {&dx, &dout}), "");
  // Lanes 32..63 hold 33..64.
  EXPECT_EQ(download<double>(dout, 1)[0], (33.0 + 64.0) * 32 / 2);
}

TEST_F(Simt, TwoDimensionalGridsAndBlocks) {
  const unsigned bx = 8, by = 4, gx = 3, gy = 2;
  const int n = int(bx * by * gx * gy);
  DevicePtr dout = upload(std::vector<int>(n, -1));
  ASSERT_EQ(run("grid2d", {gx, gy}, {bx, by}, {&dout}), "");
  std::vector<int> got = download<int>(dout, n);
  for (int y = 0; y < int(by * gy); ++y)
    for (int x = 0; x < int(bx * gx); ++x)
      EXPECT_EQ(got[y * bx * gx + x], 1000 * y + x);
}

TEST_F(Simt, ADivergentSyncthreadsIsAnError) {
  DevicePtr dx = upload(std::vector<float>(32, 0));
  std::string e = run("divergentSync", {1}, {32}, {&dx});
  EXPECT_NE(e.find("kernel divergentSync: a __syncthreads is not reached by "
                   "every thread of the block"),
            std::string::npos)
      << e;
}

// The deliberately broken kernel: `i <= n` stores one element past the end.
TEST_F(Simt, AnOutOfBoundsStoreIsCaughtWithTheKernelsName) {
  const int n = 100;
  DevicePtr dx = upload(std::vector<float>(n, 0));
  int count = n;
  std::string e = run("offByOne", {1}, {64}, {&dx, &count});
  EXPECT_NE(e.find("kernel offByOne wrote out of bounds: byte 400 of an "
                   "allocation of 400 bytes"),
            std::string::npos)
      << e;
  // Fixed, the same data passes.
  count = n - 1;
  EXPECT_EQ(run("offByOne", {1}, {64}, {&dx, &count}), "");
}

// After a kernel's error the stream skips its queued launches until the
// error is taken; each skipped launch still frees the copy of its
// parameters (before, 10,000 launches leaked 10,000 of them: about 330 KB
// of malloc's chunks; LeakSanitizer found it after a killed rank's stream
// dropped its work). Under ASan, where mallinfo2 does not see ASan's heap,
// LeakSanitizer checks the same.
TEST_F(Simt, SkippedLaunchesFreeTheirParameters) {
  const int n = 100;
  DevicePtr dx = upload(std::vector<float>(n, 0));
  int count = n;
  float a = 1;
  size_t before = mallinfo2().uordblks;
  ASSERT_FALSE(bool(driver->launch(fn("offByOne"), {1}, {64}, 0, stream,
                                   std::vector<void *>{&dx, &count}.data())));
  std::vector<void *> params = {&dx, &dx, &a, &count};
  for (int i = 0; i < 10000; ++i)
    ASSERT_FALSE(
        bool(driver->launch(fn("axpy"), {1}, {64}, 0, stream, params.data())));
  llvm::Error e = driver->synchronize(stream);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("kernel offByOne"),
            std::string::npos);
  EXPECT_LT(mallinfo2().uordblks, before + 64 * 1024);
}

// Memory never written reads as poison: NaN for floats.
TEST_F(Simt, UnwrittenMemoryReadsAsPoison) {
  auto dx = driver->allocate(64 * sizeof(float));
  ASSERT_TRUE(bool(dx));
  DevicePtr dy = upload(std::vector<float>(64, 0));
  int n = 64;
  ASSERT_EQ(run("copyN", {1}, {32}, {&*dx, &dy, &n}), "");
  for (float v : download<float>(dy, 64))
    EXPECT_TRUE(std::isnan(v));
}

TEST_F(Simt, InvalidLaunchesAndCopiesAreRefused) {
  DevicePtr dx = upload(std::vector<float>(4, 0));
  int n = 4;
  float a = 1;
  EXPECT_NE(run("axpy", {1}, {2048}, {&dx, &dx, &a, &n})
                .find("invalid launch (grid 1x1x1, block 2048x1x1"),
            std::string::npos);
  std::vector<float> big(8);
  llvm::Error e = driver->copyToDevice(dx, big.data(), 32, stream);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e))
                .find("outside every device "
                      "allocation"),
            std::string::npos);
}

TEST_F(Simt, ACompileErrorQuotesTheCompiler) {
  auto m = driver->loadModule(
      "extern \"C\" __global__ void broken(float *x) { x[0] = y; }",
      "broken.cu");
  ASSERT_FALSE(bool(m));
  std::string e = llvm::toString(m.takeError());
  EXPECT_NE(e.find("broken.cu"), std::string::npos) << e;
  EXPECT_NE(e.find("error:"), std::string::npos) << e;
  EXPECT_NE(e.find("was not declared"), std::string::npos) << e;
}

TEST_F(Simt, MemoryBeyondTheCapacityIsRefused) {
  auto small = makeInterpretDriver(1 << 20);
  auto p = small->allocate(2 << 20);
  ASSERT_FALSE(bool(p));
  EXPECT_NE(llvm::toString(p.takeError()).find("out of device memory"),
            std::string::npos);
  auto info = small->memoryInfo();
  ASSERT_TRUE(bool(info));
  EXPECT_EQ(info->first, 1 << 20);
}

} // namespace
} // namespace strata::cuda
