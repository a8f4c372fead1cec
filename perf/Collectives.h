//===- Collectives.h - Predicted time of collectives and messages ---------===//
//
// The communication half of the performance model (alpha-beta, as NCCL's
// own tuning model): a collective over n devices costs
//
//   launch + steps * latency + traffic * bytes / bandwidth
//
//   all_reduce      ring: 2(n-1) steps, traffic 2(n-1)/n
//                   tree: 2 ceil(log2 n) steps, traffic 2 (double binary
//                   tree, pipelined: each byte goes up and down once)
//   all_gather,     ring: n-1 steps, traffic (n-1)/n of the full tensor
//   reduce_scatter,
//   all_to_all
//   broadcast_from  ring: n-1 steps, traffic 1 (pipelined chain)
//   send / recv     1 step, traffic 1
//
// `bytes` is the full tensor (what an all_reduce reduces, what an
// all_gather produces). Ring or tree: the faster of the two unless one is
// forced, as NCCL chooses.
//
// The link comes from where the group's devices sit. Devices are numbered
// in the mesh's row-major order (pp slowest, then dp, tp fastest: Megatron-
// LM's rank order, passes/pipeline/Pipeline.h) and filled into nodes of
// devices_per_node in that order, so tp is innermost inside a node. A group
// inside one node uses the intra-node link; a group spanning nodes is
// limited by the network: every device of a node runs the same collective
// at once (all tp ranks of a stage do), so a group with g devices on a node
// gets g / devices_per_node of the node's NICs; latency is the network's.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Op.h"
#include "ir/Sharding.h"
#include "proto/hardware.pb.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace strata {

enum class CollectiveAlgorithm { Auto, Ring, Tree };

/// A link as one device sees it: bandwidth per direction, latency per step.
struct LinkModel {
  double bandwidth = 1, latency = 0;
};

/// Where a group sits: its size, the nodes it spans and the most of its
/// devices on one node.
struct GroupPlacement {
  int64_t size = 1, nodes = 1, perNode = 1;
};

/// The group over `axes` of `mesh` that contains device `device` (row-major
/// index), placed on nodes of `devicesPerNode`.
GroupPlacement placeGroup(const Mesh &mesh, llvm::ArrayRef<std::string> axes,
                          int64_t device, int64_t devicesPerNode);

/// The link a group of that placement communicates over (file comment).
LinkModel groupLink(const pb::Hardware &hw, const GroupPlacement &g);

/// The link between devices `a` and `b` (a point-to-point message).
LinkModel pairLink(const pb::Hardware &hw, int64_t a, int64_t b);

/// Seconds of collective `op` of `bytes` over `n` devices on `link` (with
/// hw's collective_launch_s); 0 when n == 1.
double collectiveSeconds(OpKind op, double bytes, int64_t n,
                         const LinkModel &link, const pb::Hardware &hw,
                         CollectiveAlgorithm algorithm);

/// Seconds of one message of `bytes` on `link` (latency + bytes / bw).
double messageSeconds(double bytes, const LinkModel &link);

} // namespace strata
