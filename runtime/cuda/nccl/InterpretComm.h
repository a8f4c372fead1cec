//===- InterpretComm.h - One communicator of the emulated NCCL (internal) -===//
//
// The state of one communicator of InterpretNccl.cpp: its Gloo group, the
// tickets that run its work in issue order, its asynchronous state and the
// per-peer message counters. Not for use outside runtime/cuda/nccl.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/comm/GlooCommunicator.h"
#include "runtime/cuda/nccl/Nccl.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace strata::cuda::interpret_nccl {

inline llvm::Error commError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}
/// The strata dtype of NCCL's `dt` (bytes move as I1).
inline std::optional<DType> dtypeOf(NcclDataType dt) {
  switch (dt) {
  case ncclInt8:
  case ncclUint8:
    return DType::I1; // one byte
  case ncclInt32:
    return DType::I32;
  case ncclInt64:
    return DType::I64;
  case ncclFloat16:
    return DType::F16;
  case ncclBfloat16:
    return DType::BF16;
  case ncclFloat32:
    return DType::F32;
  case ncclFloat64:
    return DType::F64;
  }
  return std::nullopt;
}

/// One emulated communicator.
struct Comm {
  std::string prefix; // its keys in the rendezvous store
  int rank = 0, size = 1;
  std::unique_ptr<ClosableCommunicator> gloo;
  std::thread worker; // a non-blocking init or split

  std::mutex mu;
  std::condition_variable cv;
  uint64_t issued = 0, done = 0; // tickets: work runs in issue order
  NcclResult state = ncclInProgress;
  std::string error;
  bool aborted = false;
  int splits = 0;
  std::map<int, uint32_t> sendSeq, recvSeq; // per peer, at issue
  std::string group;                        // Nccl::nameComm; empty: unnamed
  std::vector<int64_t> globalRanks;         // of each group rank

  /// "NCCL all_reduce over group [dp] (ranks 0,1) with peer ranks 1 failed:
  /// " for `what` with group ranks `peers` (empty: every other rank); empty
  /// for an unnamed communicator.
  std::string failedCall(const std::string &what, std::vector<int> peers) {
    std::lock_guard<std::mutex> lock(mu);
    if (group.empty())
      return "";
    // As the watchdog names them: "peer ranks" for a collective.
    bool plural = peers.empty() || peers.size() > 1;
    if (peers.empty())
      for (int r = 0; r < size; ++r)
        if (r != rank)
          peers.push_back(r);
    std::string list;
    for (int p : peers)
      list += (list.empty() ? "" : ",") +
              std::to_string(size_t(p) < globalRanks.size() ? globalRanks[p]
                                                            : int64_t(p));
    return "NCCL " + what + " over group " + group + " with peer rank" +
           (plural ? "s " : " ") + list + " failed: ";
  }

  void finish(NcclResult r, std::string why = "") {
    std::lock_guard<std::mutex> lock(mu);
    if (state == ncclInProgress || state == ncclSuccess) {
      state = r;
      error = std::move(why);
    }
    cv.notify_all();
  }
  /// Runs `fn` when ticket `t` is this communicator's turn.
  llvm::Error inTurn(uint64_t t, llvm::function_ref<llvm::Error()> fn) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done == t || aborted; });
    if (aborted)
      return commError("the communicator was aborted");
    std::string failed = state != ncclSuccess ? error : "";
    lock.unlock();
    llvm::Error e = failed.empty() ? fn() : commError(failed);
    if (e && failed.empty()) {
      std::string msg = llvm::toString(std::move(e));
      finish(ncclRemoteError, msg);
      e = commError(msg);
    }
    lock.lock();
    ++done;
    cv.notify_all();
    return e;
  }
};

} // namespace strata::cuda::interpret_nccl
