//===- Communicator.cpp - Groups of a mesh --------------------------------===//
#include "runtime/comm/Communicator.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace strata {

llvm::SmallVector<int64_t, 8> groupRanks(const Mesh &mesh, int64_t rank,
                                         llvm::ArrayRef<std::string> axes) {
  llvm::SmallVector<int64_t, 8> group;
  for (int64_t q = 0; q < mesh.numDevices(); ++q) {
    bool same = true;
    for (const MeshAxis &a : mesh.axes)
      if (!llvm::is_contained(axes, a.name) &&
          mesh.coord(q, a.name) != mesh.coord(rank, a.name))
        same = false;
    if (same)
      group.push_back(q);
  }
  std::sort(group.begin(), group.end(), [&](int64_t a, int64_t b) {
    return shardIndex(mesh, a, axes) < shardIndex(mesh, b, axes);
  });
  return group;
}

int64_t shardIndex(const Mesh &mesh, int64_t rank,
                   llvm::ArrayRef<std::string> axes) {
  int64_t index = 0;
  for (const std::string &a : axes)
    index = index * mesh.axisSize(a) + mesh.coord(rank, a);
  return index;
}

} // namespace strata
