//===- ShardingUtil.cpp - Small helpers on shardings
//-----------------------===//
#include "passes/spmd/ShardingUtil.h"

#include "llvm/Support/raw_ostream.h"

namespace strata::spmd {

int64_t groupSize(const Mesh &mesh, llvm::ArrayRef<std::string> axes) {
  int64_t n = 1;
  for (const std::string &a : axes)
    n *= mesh.axisSize(a);
  return n;
}

TensorType localType(const TensorType &global, const Sharding &s,
                     const Mesh &mesh) {
  TensorType t = global;
  for (size_t d = 0; d < s.dims.size() && d < t.shape.size(); ++d)
    t.shape[d] /= groupSize(mesh, s.dims[d]);
  return t;
}

Sharding makeSharding(Dims dims) {
  Sharding s;
  s.dims = std::move(dims);
  return s;
}

bool usesAxis(llvm::ArrayRef<DimAxes> dims, llvm::StringRef axis) {
  for (const DimAxes &d : dims)
    if (llvm::is_contained(d, axis))
      return true;
  return false;
}

Sharding dropTrivialAxes(const Sharding &s, const Mesh &mesh) {
  Sharding out = s;
  auto trivial = [&](const std::string &a) { return mesh.axisSize(a) == 1; };
  for (DimAxes &d : out.dims)
    llvm::erase_if(d, trivial);
  llvm::erase_if(out.partial, trivial);
  return out;
}

std::string axesStr(llvm::ArrayRef<std::string> axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? "," : "") + axes[i];
  return s;
}

std::string shardingStr(const Sharding &s) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printSharding(os, s);
  return text;
}

} // namespace strata::spmd
