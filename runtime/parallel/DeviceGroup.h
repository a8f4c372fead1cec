//===- DeviceGroup.h - The devices and communicators of this process ------===//
//
// A DeviceGroup is the part of a device mesh that lives in this process:
// every rank (N virtual CPU devices, each its own stream thread) for an
// in-process run, or one rank of a multi-process job started the torchrun
// way (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT). Each local rank has a device made by the backend
// (Backend.h: CPU devices today) and Gloo communicators; the group connects
// the tp, dp (each mesh axis) and world groups up front.
//
// Kernel threads: every device runs kernels with a team of
// (STRATA_NUM_THREADS or cores) / (devices on this machine) threads, OpenBLAS
// included, so N devices on a few cores do not oversubscribe.
//
// Failure: forEachRank runs a function on all local ranks at once; a rank
// that fails closes its connections (peers blocked on it fail instead of
// waiting) and raises the shared abort flag (in-process peers stop at their
// next collective), so every rank returns within a bounded time. The group
// is unusable afterwards.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Sharding.h"
#include "runtime/Device.h"
#include "runtime/HostTensor.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Heartbeat.h"
#include "runtime/parallel/Backend.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {

class GlooRendezvous;

/// One process of a multi-process job, from torchrun's environment variables.
struct DistEnv {
  int64_t rank = 0;
  int64_t worldSize = 1;
  int64_t localRank = 0;
  int64_t localWorldSize = 1;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 29500;

  /// The job this process belongs to, or nullopt when WORLD_SIZE is unset
  /// (a single-process run). Errors name the bad variable.
  static llvm::Expected<std::optional<DistEnv>> fromEnvironment();
};

struct DeviceGroupOptions {
  /// What the ranks' devices and communicators are (Backend.h).
  Backend backend = Backend::Cpu;
  /// How long a collective or a connection waits for its peers
  /// ($STRATA_COMM_TIMEOUT in seconds, default 300).
  std::chrono::milliseconds timeout = defaultTimeout();
  static std::chrono::milliseconds defaultTimeout();
};

/// Refuses more devices in one process than this machine can run: each
/// in-process device has its own stream threads, so thousands of them spin
/// the machine before anything fails. The limit is 16 per hardware thread
/// (at least 64).
llvm::Error checkInProcessDevices(int64_t devices);

class DeviceGroup {
public:
  /// Every rank of `mesh` in this process.
  static llvm::Expected<std::unique_ptr<DeviceGroup>>
  inProcess(const Mesh &mesh, const DeviceGroupOptions &options = {});
  /// Rank env.rank of a job of env.worldSize processes, which must be the
  /// mesh's device count.
  static llvm::Expected<std::unique_ptr<DeviceGroup>>
  multiProcess(const Mesh &mesh, const DistEnv &env,
               const DeviceGroupOptions &options = {});
  ~DeviceGroup();

  const Mesh &mesh() const { return mesh_; }
  size_t numLocal() const { return ranks_.size(); }
  /// Whether this process holds every rank of the mesh.
  bool allLocal() const { return int64_t(numLocal()) == mesh_.numDevices(); }
  int64_t globalRank(size_t local) const { return ranks_[local].rank; }
  Device &device(size_t local) { return *ranks_[local].device; }
  Communicators &comms(size_t local) { return *ranks_[local].comms; }
  /// `base` (seed, step, microbatch) with local rank `local`'s mesh, rank
  /// and communicators.
  LaunchContext context(size_t local, const LaunchContext &base = {}) const;

  /// Runs fn(local) for every local rank at once, one thread each. If some
  /// fail, the error names the rank that failed first (the cause) and how
  /// many stopped with it.
  llvm::Error forEachRank(llvm::function_ref<llvm::Error(size_t local)> fn);

  /// Every global rank's tensor, from each local rank's `perLocal[local]`
  /// (one type on all ranks): gathered over the world group when ranks live
  /// in other processes.
  llvm::Expected<std::vector<HostTensor>>
  allGather(llvm::ArrayRef<HostTensor> perLocal);

private:
  struct Rank {
    int64_t rank;
    std::unique_ptr<Device> device;
    std::unique_ptr<Communicators> comms;
  };
  DeviceGroup() = default;
  /// Connects each axis's group and the world on every local rank.
  llvm::Error connect();

  Mesh mesh_;
  std::shared_ptr<GlooRendezvous> rendezvous_;
  std::unique_ptr<StoreHeartbeat> heartbeat_; // a multi-process job's watchdog
  std::vector<Rank> ranks_;
  std::string failed_; // why the group is unusable, once a rank failed
};

/// Sets the kernels' thread share for `devicesOnMachine` devices.
void shareKernelThreads(int64_t devicesOnMachine);

} // namespace strata
