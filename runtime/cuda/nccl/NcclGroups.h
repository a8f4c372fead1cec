//===- NcclGroups.h - One rank's NCCL communicators over a mesh -----------===//
//
// The CUDA backend's counterpart of runtime/comm's Communicators: every
// NCCL communicator one rank needs, made up front (NCCL's splits are
// collective over the whole job, so none can be made lazily by some ranks):
//  - the world: rank 0 makes a unique id and publishes it in the job's
//    rendezvous store (strata's TCP store across processes, an in-memory
//    store in one process); every rank reads it and initializes without
//    blocking (ncclCommInitRankConfig, blocking = 0), polled with
//    ncclCommGetAsyncError until done;
//  - the group of every ordered list of the mesh's axes of size > 1 (the
//    order fixes the group ranks: runtime/comm/Communicator.h), split from
//    the world (ncclCommSplit; color: the rank's place on the other axes,
//    key: its shard index over the list);
//  - per single axis, two more for send/recv, one per direction (to a
//    higher or to a lower group rank), so that a communicator only carries
//    messages one way and a pipeline's eager sends cannot wait on each
//    other (NCCL serializes a communicator's work).
// Each communicator has its own stream (NcclCommunicator.h); a watchdog
// (NcclWatchdog.h) polls them all.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/nccl/NcclCommunicator.h"
#include "runtime/cuda/nccl/NcclWatchdog.h"

#include <map>
#include <memory>

namespace strata {
class Communicators;
}

namespace strata::cuda {

class NcclGroups {
public:
  /// The communicators of `gloo`'s rank over `gloo`'s mesh, meeting through
  /// its rendezvous. `nccl` is the real NCCL or the emulation over `driver`'s
  /// streams; `timeout` bounds the initialization and each call.
  static llvm::Expected<std::unique_ptr<NcclGroups>>
  create(std::unique_ptr<Nccl> nccl, Driver &driver, Communicators &gloo,
         std::chrono::milliseconds timeout,
         NcclWatchdog::OnFailure onFailure = nullptr);
  ~NcclGroups();

  Nccl &nccl() { return *nccl_; }
  /// The group over `axes` (axes of size 1 ignored); null for a group of
  /// this rank alone.
  llvm::Expected<NcclCommunicator *> group(llvm::ArrayRef<std::string> axes);
  /// Where a message to (`sending`) or from group rank `peer` of the group
  /// over `axes` goes: its single axis's communicator for that direction.
  llvm::Expected<NcclCommunicator *>
  pointToPoint(llvm::ArrayRef<std::string> axes, int64_t peer, bool sending);
  /// Waits for every communication stream; frees the staging and scratch
  /// buffers of the calls so far.
  llvm::Error release();

private:
  NcclGroups() = default;
  llvm::Expected<std::unique_ptr<NcclCommunicator>>
  split(int color, int key, int64_t rank, int64_t size, std::string name,
        std::vector<int64_t> globalRanks);
  llvm::Error await(NcclComm comm, const std::string &what);

  std::unique_ptr<Nccl> nccl_;
  Driver *driver_ = nullptr;
  Mesh mesh_;
  int64_t rank_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<NcclWatchdog> watchdog_;
  NcclComm world_ = nullptr;
  std::map<std::string, std::unique_ptr<NcclCommunicator>> groups_;
};

} // namespace strata::cuda
