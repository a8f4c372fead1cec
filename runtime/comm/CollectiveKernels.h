//===- CollectiveKernels.h - Collective ops of a graph on host buffers ----===//
//
// The kernel of all_reduce, all_gather, reduce_scatter, all_to_all and
// broadcast_from (ir/Ops.def) for one rank whose buffers are host memory.
// A collective along a dim other than the outermost packs the dim's blocks
// into a contiguous buffer first (and unpacks after), so the communicator
// always moves contiguous blocks in group-rank order.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "runtime/comm/Communicator.h"

#include "llvm/Support/Error.h"

namespace strata {

/// Runs collective node `n` of partitioned graph `g` for this rank: `in` is
/// its operand, `out` its result. Without `comms`, only groups of one rank
/// (axes of size 1) can run.
llvm::Error runCollective(const Graph &g, const Node &n, const void *in,
                          void *out, Communicators *comms);

/// Runs `send` (operand `in`) or `recv` (result `out`) node `n` for this
/// rank over the group of its `axes`, to or from group rank `peer`. A send
/// is eager (Communicator::postSend); a recv blocks until its data arrived.
/// The message is matched by the node's `tag` and `microbatch`, so every
/// microbatch's message is told apart.
llvm::Error runPointToPoint(const Graph &g, const Node &n, const void *in,
                            void *out, Communicators *comms,
                            uint64_t microbatch);

/// The communicator tag of a send/recv node's message `tag` in `microbatch`
/// (an error when either does not fit).
llvm::Expected<uint32_t> messageSlot(const Node &n, uint64_t microbatch);

// For the devices' own collective lowerings (CUDA's NCCL path):

/// "<op> (<scope>): <msg>".
llvm::Error collectiveError(const Node &n, const llvm::Twine &msg);

/// A tensor viewed around one dim: [outer, dim, inner] with `inner` in bytes.
struct DimView {
  int64_t outer, size, innerBytes;
};
DimView viewAround(const TensorType &t, int64_t dim);

/// A collective run without communicators: an error unless every axis of
/// node `n` has size 1 in `g`'s mesh.
llvm::Error checkSingleRankAxes(const Graph &g, const Node &n);

/// Node attribute `name`, a dim of `t` (negative counts from the end).
llvm::Expected<int64_t> dimAttr(const Node &n, const TensorType &t,
                                llvm::StringRef name);

} // namespace strata
