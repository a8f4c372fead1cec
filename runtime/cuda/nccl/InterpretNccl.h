//===- InterpretNccl.h - NCCL emulated over Gloo for interpret mode -------===//
//
// The NCCL entry points of Nccl.h on the interpret driver's host memory, so
// `--device cuda-interpret` runs the same NcclCommunicator code as a GPU,
// for ranks that are threads of one process or processes of a job:
//  - a unique id names a job-wide key prefix in the ranks' rendezvous store
//    (GlooRendezvous: in-memory in one process, strata's TCP store across
//    processes); ncclCommInitRankConfig connects a Gloo group under it;
//  - non-blocking calls (blocking = 0) return ncclInProgress and finish on
//    a thread; ncclCommGetAsyncError reports ncclInProgress until then;
//  - ncclCommSplit all-gathers (color, key) over the parent and connects a
//    Gloo group per color, ranked by key then parent rank;
//  - collectives and send/recv are host work on the given driver stream,
//    run in the order they were issued on their communicator (as NCCL
//    serializes a communicator's work); reductions are Gloo's deterministic
//    ones (runtime/comm/GlooCommunicator.cpp). A send waits until its
//    receiver posted the matching recv, as NCCL's rendezvous protocol does;
//    send/recv are matched per peer in issue order;
//  - ncclGroupStart/End batch a thread's send/recv so that one host task
//    posts the sends, receives, then waits for the sends (no deadlock in an
//    exchange);
//  - a failed Gloo operation (a peer aborted or exited) becomes the
//    communicator's asynchronous error (ncclRemoteError) and the stream's
//    error; ncclCommAbort closes the group's connections.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/cuda/nccl/Nccl.h"

#include <memory>

namespace strata {
class GlooRendezvous;
}

namespace strata::cuda {

/// Emulated NCCL whose streams are `driver`'s (an interpret driver: its
/// device pointers are host addresses) and whose bootstrap is `rendezvous`.
std::unique_ptr<Nccl>
makeInterpretNccl(Driver &driver, std::shared_ptr<GlooRendezvous> rendezvous);

} // namespace strata::cuda
