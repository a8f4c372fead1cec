//===- Reshard.cpp - Collectives that move a value between layouts
//---------===//
//
// A reshard goes in three steps, each a no-op when nothing changes:
//  1. partial axes the target does not keep: reduce_scatter into a dim the
//     target splits over exactly those axes (appended, minor, to the dim's
//     current axes), all_reduce for the rest;
//  2. dims whose axes are not a prefix of the target's: all_gather of the
//     extra minor axes;
//  3. dims the target splits further: shard_slice (local).
// Results are memoized per (value, target): a value gathered for one
// consumer is reused by the next (e.g. the sequence-parallel all_gather of a
// norm's output feeds the q, k and v projections and their weight gradients).
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Partitioner.h"

namespace strata::spmd {

namespace {
/// Length of the common prefix of two axis lists.
size_t commonPrefix(const DimAxes &a, const DimAxes &b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i])
    ++i;
  return i;
}

StrList toList(llvm::ArrayRef<std::string> axes) {
  return StrList(axes.begin(), axes.end());
}
} // namespace

ValueId Partitioner::reducedIfAvailable(ValueId v) const {
  if (sharding(v).partial.empty())
    return v;
  Sharding whole = sharding(v);
  whole.partial.clear();
  auto it = reshardCache_.find({v, shardingStr(whole)});
  return it == reshardCache_.end() ? v : it->second;
}

llvm::Expected<ValueId> Partitioner::reshard(ValueId v, const Sharding &to,
                                             const llvm::Twine &why) {
  if (sharding(v) == to)
    return v;
  auto key = std::make_pair(v, shardingStr(to));
  if (auto it = reshardCache_.find(key); it != reshardCache_.end())
    return it->second;
  Sharding cur = sharding(v);
  const std::string name = dst_.value(v).name;
  if (auto e = verifySharding(to, globalType(v), &mesh_))
    return fail("cannot lay out %" + name + " as " + shardingStr(to) + ": " +
                llvm::toString(std::move(e)));
  for (const std::string &a : to.partial)
    if (!llvm::is_contained(cur.partial, a))
      return fail("internal: cannot make %" + name + " partial over " + a);

  const std::string need = why.str();
  const Value &val = dst_.value(v);
  const std::string srcScope =
      val.isInput() ? "%" + name : dst_.node(val.defNode).scope;
  ValueId x = v;
  auto step = [&](OpKind op, Attrs attrs) -> llvm::Error {
    auto r = emit(op, {x}, std::move(attrs), {cur},
                  {freshName(name + "." + opName(op).str())});
    if (!r)
      return r.takeError();
    x = r->front();
    return llvm::Error::success();
  };

  // 1. Reduce the partial axes the target does not keep.
  DimAxes reduce;
  for (const std::string &a : cur.partial)
    if (!llvm::is_contained(to.partial, a))
      reduce.push_back(a);
  if (!reduce.empty()) {
    const PartialOrigin *o = origin(v);
    PartialOrigin from = o ? *o : PartialOrigin{"%" + name, srcScope};
    auto drop = [&](const DimAxes &axes) {
      llvm::erase_if(cur.partial, [&](const std::string &a) {
        return llvm::is_contained(axes, a);
      });
      llvm::erase_if(reduce, [&](const std::string &a) {
        return llvm::is_contained(axes, a);
      });
    };
    for (size_t d = 0; d < cur.dims.size() && !reduce.empty(); ++d) {
      size_t have = cur.dims[d].size();
      if (commonPrefix(cur.dims[d], to.dims[d]) != have ||
          to.dims[d].size() == have)
        continue;
      DimAxes axes(to.dims[d].begin() + have, to.dims[d].end());
      if (!llvm::all_of(axes, [&](const std::string &a) {
            return llvm::is_contained(reduce, a);
          }))
        continue;
      drop(axes);
      cur.dims[d].append(axes.begin(), axes.end());
      if (auto e = step(
              OpKind::ReduceScatter,
              {{"axes", toList(axes)},
               {"dim", int64_t(d)},
               {"reason", "partial sum from " + from.what +
                              ", needed split over " + axesStr(axes) +
                              " on dim " + std::to_string(d) + " by " + need},
               {"src", from.scope}}))
        return e;
    }
    if (!reduce.empty()) {
      DimAxes axes = reduce;
      drop(axes);
      if (auto e = step(OpKind::AllReduce,
                        {{"axes", toList(axes)},
                         {"reduce", std::string("sum")},
                         {"reason", "partial sum from " + from.what +
                                        ", needed whole by " + need},
                         {"src", from.scope}}))
        return e;
    }
    if (!cur.partial.empty())
      setOrigin(x, from);
  }

  // 2. Gather the minor axes the target does not have on a dim.
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    size_t keep = commonPrefix(cur.dims[d], to.dims[d]);
    if (keep == cur.dims[d].size())
      continue;
    DimAxes axes(cur.dims[d].begin() + keep, cur.dims[d].end());
    cur.dims[d].resize(keep);
    if (auto e =
            step(OpKind::AllGather,
                 {{"axes", toList(axes)},
                  {"dim", int64_t(d)},
                  {"reason", "dim " + std::to_string(d) + " split over " +
                                 axesStr(axes) + ", needed whole by " + need},
                  {"src", srcScope}}))
      return e;
  }

  // 3. Split further by taking this rank's slice.
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    size_t have = cur.dims[d].size();
    if (to.dims[d].size() == have)
      continue;
    DimAxes axes(to.dims[d].begin() + have, to.dims[d].end());
    cur.dims[d] = to.dims[d];
    if (auto e = step(OpKind::ShardSlice,
                      {{"axes", toList(axes)},
                       {"dim", int64_t(d)},
                       {"reason", "dim " + std::to_string(d) +
                                      " whole, needed split over " +
                                      axesStr(axes) + " by " + need},
                       {"src", srcScope}}))
      return e;
  }
  if (const PartialOrigin *o = origin(v); o && !cur.partial.empty())
    setOrigin(x, *o);
  reshardCache_[key] = x;
  return x;
}

} // namespace strata::spmd
