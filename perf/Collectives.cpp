//===- Collectives.cpp - Predicted time of collectives and messages -------===//
#include "perf/Collectives.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>

namespace strata {

GroupPlacement placeGroup(const Mesh &mesh, llvm::ArrayRef<std::string> axes,
                          int64_t device, int64_t devicesPerNode) {
  // Strides of the row-major numbering, and the device's coordinates.
  size_t na = mesh.axes.size();
  llvm::SmallVector<int64_t, 4> stride(na, 1), coord(na, 0);
  for (size_t i = na; i-- > 1;)
    stride[i - 1] = stride[i] * mesh.axes[i].size;
  for (size_t i = 0; i < na; ++i)
    coord[i] = (device / stride[i]) % mesh.axes[i].size;
  // The group's members: every combination of coordinates over `axes`.
  llvm::SmallVector<int64_t, 16> members = {0};
  for (size_t i = 0; i < na; ++i) {
    bool inGroup = llvm::is_contained(axes, mesh.axes[i].name);
    llvm::SmallVector<int64_t, 16> next;
    for (int64_t base : members) {
      if (!inGroup) {
        next.push_back(base + coord[i] * stride[i]);
        continue;
      }
      for (int64_t c = 0; c < mesh.axes[i].size; ++c)
        next.push_back(base + c * stride[i]);
    }
    members = std::move(next);
  }
  llvm::DenseMap<int64_t, int64_t> perNode;
  for (int64_t d : members)
    ++perNode[d / devicesPerNode];
  GroupPlacement g;
  g.size = int64_t(members.size());
  g.nodes = int64_t(perNode.size());
  g.perNode = 0;
  for (auto &e : perNode)
    g.perNode = std::max(g.perNode, e.second);
  return g;
}

LinkModel groupLink(const pb::Hardware &hw, const GroupPlacement &g) {
  if (g.nodes <= 1)
    return {hw.intra_node().bandwidth(), hw.intra_node().latency_s()};
  double nicShare = hw.nics_per_node() * hw.nic().bandwidth() *
                    double(g.perNode) / double(hw.devices_per_node());
  return {std::min(hw.intra_node().bandwidth(), nicShare),
          hw.nic().latency_s()};
}

LinkModel pairLink(const pb::Hardware &hw, int64_t a, int64_t b) {
  int64_t dpn = hw.devices_per_node();
  if (a / dpn == b / dpn)
    return {hw.intra_node().bandwidth(), hw.intra_node().latency_s()};
  // Every device of the node sends at once (all tp and dp ranks of a stage).
  return {std::min(hw.intra_node().bandwidth(),
                   hw.nics_per_node() * hw.nic().bandwidth() / double(dpn)),
          hw.nic().latency_s()};
}

double collectiveSeconds(OpKind op, double bytes, int64_t n,
                         const LinkModel &link, const pb::Hardware &hw,
                         CollectiveAlgorithm algorithm) {
  if (n <= 1)
    return 0;
  double dn = double(n), launch = hw.collective_launch_s();
  auto cost = [&](double steps, double traffic) {
    return launch + steps * link.latency + traffic * bytes / link.bandwidth;
  };
  switch (op) {
  case OpKind::AllReduce: {
    double ring = cost(2 * (dn - 1), 2 * (dn - 1) / dn);
    double tree = cost(2 * std::ceil(std::log2(dn)), 2);
    if (algorithm == CollectiveAlgorithm::Ring)
      return ring;
    if (algorithm == CollectiveAlgorithm::Tree)
      return tree;
    return std::min(ring, tree);
  }
  case OpKind::BroadcastFrom:
    return cost(dn - 1, 1);
  default: // all_gather, reduce_scatter, all_to_all: ring
    return cost(dn - 1, (dn - 1) / dn);
  }
}

double messageSeconds(double bytes, const LinkModel &link) {
  return link.latency + bytes / link.bandwidth;
}

} // namespace strata
