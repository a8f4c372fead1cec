//===- Communicator.h - Process groups and their collectives --------------===//
//
// A Communicator is one process group: `size()` ranks, this one being
// `rank()`, and the collectives of ir/Ops.def on contiguous host buffers.
// Reductions take f32 or f64; moves (gather, all-to-all, broadcast,
// send/recv) copy elements of any dtype.
//
// Every reduction is deterministic: element i of the result is
// ((x_0 + x_1) + x_2) + ... over the group ranks in order, whatever the
// timing, and every rank gets the same bits (see GlooCommunicator.cpp).
//
// Communicators is one rank's set of groups over a device mesh: the group
// of `axes` holds the ranks that differ from this one only along those axes,
// ordered by shard index over `axes` (major to minor), as the collectives of
// a partitioned graph expect.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Sharding.h"
#include "ir/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace strata {

enum class ReduceOp { Sum, Max };

/// One process group. Calls are blocking and must be made by every rank of
/// the group in the same order, one at a time.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;

  /// In place: buf[0, count) becomes the reduction over the group.
  virtual llvm::Error allReduce(void *buf, int64_t count, DType dt,
                                ReduceOp op) = 0;
  /// out[size * count] is the concatenation of every rank's in[count], by
  /// group rank.
  virtual llvm::Error allGather(const void *in, void *out, int64_t count,
                                DType dt) = 0;
  /// in[size * count] holds one block per rank; out[count] is the reduction
  /// over the group of the blocks of this rank.
  virtual llvm::Error reduceScatter(const void *in, void *out, int64_t count,
                                    DType dt, ReduceOp op) = 0;
  /// in[size * count]: block j goes to rank j; out[size * count]: block j
  /// came from rank j.
  virtual llvm::Error allToAll(const void *in, void *out, int64_t count,
                               DType dt) = 0;
  /// buf[count] becomes rank `root`'s buf.
  virtual llvm::Error broadcast(void *buf, int64_t count, DType dt,
                                int64_t root) = 0;
  /// Point to point, matched by (peer, tag).
  virtual llvm::Error send(const void *buf, int64_t count, DType dt,
                           int64_t peer, uint32_t tag) = 0;
  virtual llvm::Error recv(void *buf, int64_t count, DType dt, int64_t peer,
                           uint32_t tag) = 0;
  /// An eager send (the pipeline's semantics, passes/pipeline/Schedule.h):
  /// copies buf[count] and returns without waiting for the peer's recv; the
  /// copy is kept until waitSends.
  virtual llvm::Error postSend(const void *buf, int64_t count, DType dt,
                               int64_t peer, uint32_t tag) = 0;
  /// Waits until every posted send has reached its peer.
  virtual llvm::Error waitSends() = 0;
  /// Waits for the posted sends to `peer` with `tag` (and frees their
  /// copies); none posted is no error.
  virtual llvm::Error waitSend(int64_t peer, uint32_t tag) = 0;
};

/// One rank's communicators over a mesh.
class Communicators {
public:
  virtual ~Communicators() = default;
  virtual const Mesh &mesh() const = 0;
  /// This rank's index in the mesh.
  virtual int64_t rank() const = 0;
  /// The group over `axes` (see the file comment), connected on first use:
  /// every member must ask for it, in the same order. The trainer connects
  /// every group its programs use before the first step
  /// (runtime/parallel/Trainer.h), as NCCL requires. Axes of size 1 and
  /// axes absent from the mesh contribute nothing; an empty group is this
  /// rank alone.
  virtual llvm::Expected<Communicator *>
  group(llvm::ArrayRef<std::string> axes) = 0;
  /// Closes every connection of this rank, so peers blocked on it fail
  /// instead of waiting; later calls fail. Call it on a rank that failed.
  virtual void abort(llvm::StringRef reason) = 0;
};

/// The ranks of the group over `axes` that contains `rank`, by shard index.
llvm::SmallVector<int64_t, 8> groupRanks(const Mesh &mesh, int64_t rank,
                                         llvm::ArrayRef<std::string> axes);
/// `rank`'s shard index over `axes` (major to minor).
int64_t shardIndex(const Mesh &mesh, int64_t rank,
                   llvm::ArrayRef<std::string> axes);

} // namespace strata
