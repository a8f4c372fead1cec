//===- Sharding.h - Device mesh and per-value shardings ------------------===//
//
// A Mesh has named axes, listed slowest to fastest (`mesh<pp=2,dp=2,tp=2>`):
// ranks are row-major over that list, so tp is fastest, as in Megatron.
// A Sharding says, per tensor dim, which mesh axes split it (none: replicated
// along that dim), plus the axes over which the value is a pending partial sum.
// Text: `{shard=[dp,_,tp], partial=[tp]}`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace strata {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
  bool operator==(const MeshAxis &o) const {
    return name == o.name && size == o.size;
  }
};

/// A logical device mesh.
struct Mesh {
  llvm::SmallVector<MeshAxis, 3> axes; // slowest first

  int64_t numDevices() const;
  /// Index of the named axis, or -1.
  int axisIndex(llvm::StringRef name) const;
  int64_t axisSize(llvm::StringRef name) const; // 1 if the axis is absent
  /// Coordinate of `rank` along `axis`.
  int64_t coord(int64_t rank, llvm::StringRef axis) const;
  bool operator==(const Mesh &o) const { return axes == o.axes; }
  bool empty() const { return axes.empty(); }
};

/// How one value is laid out over the mesh.
struct Sharding {
  /// Per tensor dim, the mesh axes splitting it (major to minor); empty = not
  /// split.
  llvm::SmallVector<llvm::SmallVector<std::string, 1>, 4> dims;
  /// Mesh axes over which the value is a partial sum.
  llvm::SmallVector<std::string, 1> partial;

  static Sharding replicated(int64_t rank);
  bool isReplicated() const;
  bool operator==(const Sharding &o) const {
    return dims == o.dims && partial == o.partial;
  }
  bool operator!=(const Sharding &o) const { return !(*this == o); }
};

/// Prints `shard=[dp,_,tp]` and, when partial is non-empty, `, partial=[tp]`.
/// A dim split over two axes prints as `dp*tp`.
void printSharding(llvm::raw_ostream &os, const Sharding &s);
void printMesh(llvm::raw_ostream &os, const Mesh &m); // `mesh<dp=2,tp=2>`

} // namespace strata
