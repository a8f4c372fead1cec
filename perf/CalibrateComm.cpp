//===- CalibrateComm.cpp - Collective latency and bandwidth over Gloo -----===//
//
// `devices` ranks, threads of this process, connect through the trainer's
// in-process Gloo rendezvous (runtime/comm/GlooCommunicator.h) and time
// all_reduce over message sizes from 4 bytes to a few MB (rank 0's fastest
// of four batches of calls, as the kernels are timed: on a machine shared
// with other work a mean measures the neighbours; the first call warms the
// connection). A least-squares line t = a + b * bytes through them is the ring
// all-reduce of perf/Collectives.h with no separate launch term: 2(n-1) steps
// of latency a / 2(n-1), traffic 2(n-1)/n * bytes at bandwidth 2(n-1)/n / b.
// Pipeline messages of a CPU plan use the same link.
//
//===----------------------------------------------------------------------===//
#include "perf/Calibrate.h"

#include "runtime/comm/GlooCommunicator.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

llvm::Error calibrateCollectives(int devices, bool quick, pb::Hardware &hw,
                                 llvm::raw_ostream &log) {
  using Clock = std::chrono::steady_clock;
  Mesh mesh;
  mesh.axes.push_back({"dp", devices});
  auto rendezvous = GlooRendezvous::inProcess(std::chrono::seconds(60));
  std::vector<int64_t> sizes = {4, 256, 16 << 10, 256 << 10, 1 << 20};
  if (!quick)
    sizes.push_back(8 << 20);
  // seconds[i]: rank 0's time per call of sizes[i].
  std::vector<double> seconds(sizes.size());
  std::mutex mu;
  llvm::Error failed = llvm::Error::success();
  auto rank = [&](int r) {
    auto comms = createGlooCommunicators(mesh, r, rendezvous);
    auto fail = [&](llvm::Error e) {
      std::lock_guard<std::mutex> lock(mu);
      failed = llvm::joinErrors(std::move(failed), std::move(e));
      comms->abort("calibration failed");
    };
    auto group = comms->group({"dp"});
    if (!group)
      return fail(group.takeError());
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t count = sizes[i] / 4;
      std::vector<float> buf(size_t(count), 1.0f);
      // Fewer repetitions of the big messages; the same on every rank.
      int64_t reps = std::max<int64_t>(quick ? 4 : 10,
                                       (quick ? 4 : 16) * (1 << 20) / sizes[i]);
      reps = std::min<int64_t>(reps, quick ? 200 : 1000);
      // A warm-up call, then the fastest of kBatches batches (as timeCalls:
      // other processes only add time).
      constexpr int64_t kBatches = 4;
      int64_t perBatch = std::max<int64_t>(1, reps / kBatches);
      for (int64_t b = -1; b < kBatches; ++b) {
        auto t0 = Clock::now();
        for (int64_t j = 0; j < (b < 0 ? 1 : perBatch); ++j)
          if (llvm::Error e = (*group)->allReduce(buf.data(), count, DType::F32,
                                                  ReduceOp::Sum))
            return fail(std::move(e));
        double s = std::chrono::duration<double>(Clock::now() - t0).count() /
                   double(perBatch);
        if (r == 0 && b >= 0)
          seconds[i] = b == 0 ? s : std::min(seconds[i], s);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < devices; ++r)
    threads.emplace_back(rank, r);
  for (std::thread &t : threads)
    t.join();
  if (failed)
    return failed;
  // Least squares of seconds on bytes.
  double n = double(sizes.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    double x = double(sizes[i]), y = seconds[i];
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  double intercept = (sy - slope * sx) / n;
  // The smallest message bounds the fixed part when the fit's is below it.
  intercept = std::max(intercept, 0.5 * seconds.front());
  slope = std::max(slope, 1e-12);
  double steps = 2.0 * (devices - 1), traffic = steps / devices;
  pb::Link link;
  link.set_latency_s(intercept / steps);
  link.set_bandwidth(traffic / slope);
  *hw.mutable_intra_node() = link;
  *hw.mutable_nic() = link;
  hw.set_nics_per_node(1);
  hw.set_collective_launch_s(0);
  log << llvm::formatv("collectives: all_reduce over {0} ranks: {1:f1} us "
                       "per step, {2:f2} GB/s (4 B: {3:f1} us, {4} B: {5:f1} "
                       "us)\n",
                       devices, link.latency_s() * 1e6, link.bandwidth() / 1e9,
                       seconds.front() * 1e6, sizes.back(),
                       seconds.back() * 1e6);
  return llvm::Error::success();
}

} // namespace strata
