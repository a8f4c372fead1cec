//===- Nccl.h - The NCCL calls the CUDA backend makes ---------------------===//
//
// The CUDA backend's collectives go through this interface, a mirror of the
// NCCL entry points it uses, one method each: unique ids, non-blocking
// initialisation and splitting, the collectives and send/recv on a stream,
// group start/end, the asynchronous error, abort and destroy. Two
// implementations, as for cuda::Driver (runtime/cuda/Driver.h):
//   - the real one (RealNccl.cpp): libnccl.so.2 loaded with dlopen, its ABI
//     types declared here, so no NCCL or CUDA header is needed to build;
//   - interpret mode (InterpretNccl.h): the same calls emulated over Gloo on
//     the interpret driver's host memory, in stream order.
// Both return NCCL's result codes, so the caller (NcclCommunicator.h) is one
// code path.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/Driver.h"

#include "llvm/Support/Error.h"

#include <climits>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace strata::cuda {

// NCCL's ABI (nccl.h, stable since 2.x).
using NcclComm = void *; // ncclComm_t
struct NcclUniqueId {    // ncclUniqueId
  char internal[128];
};
enum NcclResult : int { // ncclResult_t
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
};
enum NcclDataType : int { // ncclDataType_t
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt64 = 4,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
};
enum NcclRedOp : int { ncclSum = 0, ncclMax = 2 }; // ncclRedOp_t
/// ncclConfig_t as of NCCL 2.18 (NCCL reads `size` bytes of a config of
/// this `version`, newer libraries included).
struct NcclConfig {
  size_t size = sizeof(NcclConfig);
  unsigned magic = 0xcafebeef;
  unsigned version = 21800; // NCCL_VERSION(2, 18, 0)
  int blocking = INT_MIN;   // NCCL_CONFIG_UNDEF_INT
  int cgaClusterSize = INT_MIN;
  int minCTAs = INT_MIN;
  int maxCTAs = INT_MIN;
  const char *netName = nullptr;
  int splitShare = INT_MIN;
};
/// ncclCommSplit's color for ranks that join no new communicator.
constexpr int kNcclSplitNoColor = -1;

/// The NCCL entry points (see the file comment). Streams are the driver's.
class Nccl {
public:
  virtual ~Nccl() = default;
  /// "nccl 2.21.5" or "nccl-interpret".
  virtual std::string version() const = 0;
  virtual const char *errorString(NcclResult r) = 0;
  virtual const char *lastError(NcclComm comm) = 0;

  virtual NcclResult getUniqueId(NcclUniqueId *id) = 0;
  virtual NcclResult commInitRankConfig(NcclComm *comm, int nranks,
                                        NcclUniqueId id, int rank,
                                        NcclConfig *config) = 0;
  virtual NcclResult commSplit(NcclComm comm, int color, int key,
                               NcclComm *newcomm, NcclConfig *config) = 0;
  /// ncclInProgress while a non-blocking call is still running.
  virtual NcclResult commGetAsyncError(NcclComm comm,
                                       NcclResult *asyncError) = 0;
  virtual NcclResult commAbort(NcclComm comm) = 0;
  virtual NcclResult commDestroy(NcclComm comm) = 0;

  virtual NcclResult allReduce(const void *send, void *recv, size_t count,
                               NcclDataType dt, NcclRedOp op, NcclComm comm,
                               StreamHandle s) = 0;
  /// recv[count] is the reduction of every rank's block `rank` of
  /// send[nranks * count].
  virtual NcclResult reduceScatter(const void *send, void *recv, size_t count,
                                   NcclDataType dt, NcclRedOp op, NcclComm comm,
                                   StreamHandle s) = 0;
  /// recv[nranks * count] from every rank's send[count].
  virtual NcclResult allGather(const void *send, void *recv, size_t count,
                               NcclDataType dt, NcclComm comm,
                               StreamHandle s) = 0;
  virtual NcclResult broadcast(const void *send, void *recv, size_t count,
                               NcclDataType dt, int root, NcclComm comm,
                               StreamHandle s) = 0;
  virtual NcclResult send(const void *buf, size_t count, NcclDataType dt,
                          int peer, NcclComm comm, StreamHandle s) = 0;
  virtual NcclResult recv(void *buf, size_t count, NcclDataType dt, int peer,
                          NcclComm comm, StreamHandle s) = 0;
  virtual NcclResult groupStart() = 0;
  virtual NcclResult groupEnd() = 0;

  /// Not NCCL's: names `comm` in the errors its calls leave on their
  /// stream (interpret mode, where a failed Gloo call is a failed host
  /// callback): `group` as in "[dp] (ranks 0,1)", `globalRanks[i]` group
  /// rank i's rank in the job. Real NCCL reports failures only through
  /// ncclCommGetAsyncError, which the watchdog names.
  virtual void nameComm(NcclComm comm, const std::string &group,
                        std::vector<int64_t> globalRanks) {
    (void)comm;
    (void)group;
    (void)globalRanks;
  }
};

/// libnccl.so.2 by dlopen, or why it cannot be used (missing, or too old
/// for ncclCommSplit: NCCL 2.18 or newer is needed).
llvm::Expected<std::unique_ptr<Nccl>> openRealNccl();

} // namespace strata::cuda
