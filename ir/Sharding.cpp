//===- Sharding.cpp - Device mesh and shardings
//----------------------------===//
#include "ir/Sharding.h"

namespace strata {

int64_t Mesh::numDevices() const {
  int64_t n = 1;
  for (const MeshAxis &a : axes)
    n *= a.size;
  return n;
}

int Mesh::axisIndex(llvm::StringRef name) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int64_t Mesh::axisSize(llvm::StringRef name) const {
  int i = axisIndex(name);
  return i < 0 ? 1 : axes[i].size;
}

int64_t Mesh::coord(int64_t rank, llvm::StringRef axis) const {
  int idx = axisIndex(axis);
  if (idx < 0)
    return 0;
  int64_t stride = 1;
  for (size_t i = idx + 1; i < axes.size(); ++i)
    stride *= axes[i].size;
  return (rank / stride) % axes[idx].size;
}

Sharding Sharding::replicated(int64_t rank) {
  Sharding s;
  s.dims.resize(rank);
  return s;
}

bool Sharding::isReplicated() const {
  if (!partial.empty())
    return false;
  for (const auto &d : dims)
    if (!d.empty())
      return false;
  return true;
}

void printSharding(llvm::raw_ostream &os, const Sharding &s) {
  os << "shard=[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    if (i)
      os << ',';
    if (s.dims[i].empty())
      os << '_';
    for (size_t k = 0; k < s.dims[i].size(); ++k)
      os << (k ? "*" : "") << s.dims[i][k];
  }
  os << ']';
  if (!s.partial.empty()) {
    os << ", partial=[";
    for (size_t k = 0; k < s.partial.size(); ++k)
      os << (k ? "," : "") << s.partial[k];
    os << ']';
  }
}

void printMesh(llvm::raw_ostream &os, const Mesh &m) {
  os << "mesh<";
  for (size_t i = 0; i < m.axes.size(); ++i)
    os << (i ? "," : "") << m.axes[i].name << '=' << m.axes[i].size;
  os << '>';
}

} // namespace strata
