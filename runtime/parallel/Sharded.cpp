//===- Sharded.cpp - Logical tensors <-> per-rank shards ------------------===//
#include "runtime/parallel/Sharded.h"

#include "runtime/comm/Communicator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstring>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Calls f(local offset, global offset) in elements for every contiguous run
/// of the innermost dim of a block of shape `local` at `offsets` in a tensor
/// of shape `global`; `run` is the run length.
void forEachRun(llvm::ArrayRef<int64_t> local, llvm::ArrayRef<int64_t> global,
                llvm::ArrayRef<int64_t> offsets,
                llvm::function_ref<void(int64_t, int64_t, int64_t)> f) {
  size_t r = local.size();
  if (r == 0)
    return f(0, 0, 1);
  int64_t run = local.back(),
          rows = numElements(local) / std::max<int64_t>(run, 1);
  if (run == 0)
    return;
  llvm::SmallVector<int64_t, 4> idx(r, 0);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t g = 0;
    for (size_t d = 0; d < r; ++d)
      g = g * global[d] + idx[d] + offsets[d];
    f(row * run, g, run);
    for (size_t d = r - 1; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
}

llvm::SmallVector<int64_t, 4> blockOffsets(const TensorType &local,
                                           const Sharding &s, const Mesh &mesh,
                                           int64_t rank) {
  llvm::SmallVector<int64_t, 4> off;
  for (size_t d = 0; d < local.shape.size(); ++d)
    off.push_back(shardIndex(mesh, rank, s.dims[d]) * local.shape[d]);
  return off;
}

bool usesAxis(const Sharding &s, llvm::StringRef axis) {
  return llvm::any_of(
      s.dims, [&](const auto &d) { return llvm::is_contained(d, axis); });
}

llvm::Error checkRank(const Sharding &s, const TensorType &t) {
  if (int64_t(s.dims.size()) != t.rank())
    return err("sharding of rank " + llvm::Twine(s.dims.size()) +
               " for a tensor " + t.str());
  return llvm::Error::success();
}
} // namespace

llvm::Expected<TensorType> localType(const TensorType &type, const Sharding &s,
                                     const Mesh &mesh) {
  if (auto e = checkRank(s, type))
    return e;
  TensorType local = type;
  for (size_t d = 0; d < local.shape.size(); ++d) {
    int64_t ways = 1;
    for (const std::string &a : s.dims[d])
      ways *= mesh.axisSize(a);
    if (local.shape[d] % ways)
      return err("dim " + llvm::Twine(d) + " of " + type.str() +
                 " does not split " + llvm::Twine(ways) + " ways");
    local.shape[d] /= ways;
  }
  return local;
}

llvm::Expected<HostTensor> shardOf(const HostTensor &full, const Sharding &s,
                                   const Mesh &mesh, int64_t rank) {
  auto local = localType(full.type(), s, mesh);
  if (!local)
    return local.takeError();
  HostTensor out(*local);
  for (const std::string &a : s.partial)
    if (mesh.coord(rank, a) != 0)
      return out; // zeros: the sum is `full`
  int64_t eb = dtypeBytes(full.dtype());
  const char *src = static_cast<const char *>(full.raw());
  char *dst = static_cast<char *>(out.raw());
  forEachRun(local->shape, full.shape(), blockOffsets(*local, s, mesh, rank),
             [&](int64_t l, int64_t g, int64_t n) {
               std::memcpy(dst + l * eb, src + g * eb, n * eb);
             });
  return out;
}

llvm::Expected<HostTensor>
blockOf(const TensorType &type, const Sharding &s, const Mesh &mesh,
        int64_t rank, llvm::function_ref<double(int64_t)> element) {
  auto local = localType(type, s, mesh);
  if (!local)
    return local.takeError();
  HostTensor out(*local);
  for (const std::string &a : s.partial)
    if (mesh.coord(rank, a) != 0)
      return out;
  forEachRun(local->shape, type.shape, blockOffsets(*local, s, mesh, rank),
             [&](int64_t l, int64_t g, int64_t n) {
               for (int64_t j = 0; j < n; ++j)
                 out.set(l + j, element(g + j));
             });
  return out;
}

Sharding shardingOf(const Graph &g, ValueId v) {
  const Value &val = g.value(v);
  return val.sharding ? *val.sharding : Sharding::replicated(val.type.rank());
}

llvm::Expected<HostTensor> gatherFull(llvm::ArrayRef<HostTensor> blocks,
                                      const Sharding &s, const Mesh &mesh) {
  if (int64_t(blocks.size()) != mesh.numDevices())
    return err("gatherFull: " + llvm::Twine(blocks.size()) +
               " blocks for a mesh of " + llvm::Twine(mesh.numDevices()));
  const TensorType &local = blocks[0].type();
  if (auto e = checkRank(s, local))
    return e;
  TensorType global = local;
  for (size_t d = 0; d < global.shape.size(); ++d)
    for (const std::string &a : s.dims[d])
      global.shape[d] *= mesh.axisSize(a);
  const bool sums = !s.partial.empty();
  HostTensor out(global);
  std::vector<double> acc(sums ? out.numElements() : 0, 0.0);
  int64_t eb = dtypeBytes(local.dtype);
  for (int64_t r = 0; r < mesh.numDevices(); ++r) {
    // One copy per block: coordinate 0 along axes that neither split nor sum.
    bool representative = llvm::all_of(mesh.axes, [&](const MeshAxis &a) {
      return usesAxis(s, a.name) || llvm::is_contained(s.partial, a.name) ||
             mesh.coord(r, a.name) == 0;
    });
    if (!representative)
      continue;
    const HostTensor &b = blocks[r];
    if (b.type() != local)
      return err("gatherFull: rank " + llvm::Twine(r) + " holds " +
                 b.type().str() + ", rank 0 " + local.str());
    forEachRun(local.shape, global.shape, blockOffsets(local, s, mesh, r),
               [&](int64_t l, int64_t g, int64_t n) {
                 if (!sums)
                   std::memcpy(static_cast<char *>(out.raw()) + g * eb,
                               static_cast<const char *>(b.raw()) + l * eb,
                               n * eb);
                 else
                   for (int64_t i = 0; i < n; ++i)
                     acc[g + i] += b.get(l + i);
               });
  }
  for (size_t i = 0; i < acc.size(); ++i)
    out.set(int64_t(i), acc[i]);
  return out;
}

} // namespace strata
