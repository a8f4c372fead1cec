//===- SpmdSimulator.cpp - Runs a partitioned graph on every rank
//----------===//
#include "SpmdSimulator.h"

#include "runtime/cpu/CpuDevice.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>

namespace strata::spmdtest {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Calls f(local flat index, global flat index) for every element of a block
/// of shape `local` at `offsets` inside a tensor of shape `global`.
void forEachInBlock(llvm::ArrayRef<int64_t> local,
                    llvm::ArrayRef<int64_t> global,
                    llvm::ArrayRef<int64_t> offsets,
                    llvm::function_ref<void(int64_t, int64_t)> f) {
  size_t r = local.size();
  llvm::SmallVector<int64_t, 4> idx(r, 0);
  for (int64_t j = 0, n = numElements(local); j < n; ++j) {
    int64_t g = 0;
    for (size_t d = 0; d < r; ++d)
      g = g * global[d] + idx[d] + offsets[d];
    f(j, g);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < local[d])
        break;
      idx[d] = 0;
    }
  }
}

struct Block {
  Shape global;
  llvm::SmallVector<int64_t, 4> offsets;
};

Block blockOf(const TensorType &local, const Sharding &s, const Mesh &mesh,
              int64_t rank) {
  Block b{local.shape, {}};
  for (size_t d = 0; d < local.shape.size(); ++d) {
    int64_t ways = 1;
    for (const std::string &a : s.dims[d])
      ways *= mesh.axisSize(a);
    b.global[d] *= ways;
    b.offsets.push_back(shardIndex(mesh, rank, s.dims[d]) * local.shape[d]);
  }
  return b;
}

/// The ranks that differ from `rank` only along `axes`, by shard index.
std::vector<int64_t> groupOf(const Mesh &mesh, int64_t rank,
                             llvm::ArrayRef<std::string> axes) {
  std::vector<int64_t> group;
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

using RankValues = std::vector<std::vector<HostTensor>>; // [rank][value]

/// The collective `n` for every rank, by its definition in ir/Ops.def.
llvm::Error runCollective(const Graph &g, const Node &n, RankValues &vals) {
  const Mesh &mesh = *g.mesh;
  StrList axes = n.attrs.getStrings("axes");
  ValueId in = n.operands[0], out = n.results[0];
  const TensorType &outType = g.type(out);
  bool isMax = n.attrs.getString("reduce", "sum") == "max";
  for (int64_t r = 0; r < int64_t(vals.size()); ++r) {
    std::vector<int64_t> group = groupOf(mesh, r, axes);
    HostTensor y(outType);
    if (n.op == OpKind::AllGather) {
      for (int64_t q : group) {
        const HostTensor &x = vals[q][in];
        llvm::SmallVector<int64_t, 4> offsets(outType.rank(), 0);
        offsets[n.attrs.getInt("dim")] =
            shardIndex(mesh, q, axes) * x.shape()[n.attrs.getInt("dim")];
        forEachInBlock(x.shape(), outType.shape, offsets,
                       [&](int64_t j, int64_t gi) { y.set(gi, x.get(j)); });
      }
    } else if (n.op == OpKind::AllReduce || n.op == OpKind::ReduceScatter) {
      const TensorType &inType = g.type(in);
      HostTensor sum(inType);
      for (int64_t i = 0; i < inType.numElements(); ++i) {
        double acc = vals[group[0]][in].get(i);
        for (size_t k = 1; k < group.size(); ++k) {
          double v = vals[group[k]][in].get(i);
          acc = isMax ? std::max(acc, v) : acc + v;
        }
        sum.set(i, acc);
      }
      if (n.op == OpKind::AllReduce) {
        y = std::move(sum);
      } else {
        llvm::SmallVector<int64_t, 4> offsets(outType.rank(), 0);
        int64_t dim = n.attrs.getInt("dim");
        offsets[dim] = shardIndex(mesh, r, axes) * outType.shape[dim];
        forEachInBlock(outType.shape, inType.shape, offsets,
                       [&](int64_t j, int64_t gi) { y.set(j, sum.get(gi)); });
      }
    } else {
      return err("simulator: no rule for " + opName(n.op));
    }
    vals[r][out] = std::move(y);
  }
  return llvm::Error::success();
}
} // namespace

int64_t shardIndex(const Mesh &mesh, int64_t rank,
                   llvm::ArrayRef<std::string> axes) {
  int64_t index = 0;
  for (const std::string &a : axes)
    index = index * mesh.axisSize(a) + mesh.coord(rank, a);
  return index;
}

HostTensor shardOf(const HostTensor &global, const Sharding &s,
                   const Mesh &mesh, int64_t rank) {
  TensorType local = global.type();
  for (size_t d = 0; d < local.shape.size(); ++d)
    for (const std::string &a : s.dims[d])
      local.shape[d] /= mesh.axisSize(a);
  HostTensor out(local);
  Block b = blockOf(local, s, mesh, rank);
  forEachInBlock(local.shape, b.global, b.offsets,
                 [&](int64_t j, int64_t gi) { out.set(j, global.get(gi)); });
  return out;
}

llvm::Expected<std::vector<HostTensor>>
simulate(const Graph &g, llvm::ArrayRef<HostTensor> inputs, uint64_t seed) {
  Mesh serial;
  const Mesh &mesh = g.partitioned ? *g.mesh : serial;
  int64_t ranks = g.partitioned ? mesh.numDevices() : 1;
  auto shardingOf = [&](ValueId v) {
    const Value &val = g.value(v);
    return val.sharding ? *val.sharding : Sharding::replicated(val.type.rank());
  };
  RankValues vals(ranks, std::vector<HostTensor>(g.numValues()));
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    ValueId v = g.inputs()[i];
    for (int64_t r = 0; r < ranks; ++r)
      vals[r][v] = g.partitioned ? shardOf(inputs[i], shardingOf(v), mesh, r)
                                 : inputs[i].clone();
  }
  for (const Node &n : g.nodes()) {
    if (isCollective(n.op)) {
      if (auto e = runCollective(g, n, vals))
        return e;
      continue;
    }
    for (int64_t r = 0; r < ranks; ++r) {
      llvm::SmallVector<const void *, 4> ins;
      llvm::SmallVector<void *, 3> outs;
      for (ValueId v : n.operands)
        ins.push_back(vals[r][v].raw());
      for (ValueId v : n.results) {
        vals[r][v] = HostTensor(g.type(v));
        outs.push_back(vals[r][v].raw());
      }
      LaunchContext ctx;
      ctx.seed = seed;
      ctx.mesh = g.partitioned ? &mesh : nullptr;
      ctx.rank = r;
      if (auto e = runCpuKernel(g, n, ins, outs, ctx))
        return e;
    }
  }
  // Outputs: one representative per replicated axis; partial sums added.
  std::vector<HostTensor> outs;
  for (ValueId v : g.outputs()) {
    Sharding s = shardingOf(v);
    TensorType local = g.type(v);
    Block b0 = blockOf(local, s, mesh, 0);
    HostTensor y(TensorType{local.dtype, b0.global});
    for (int64_t r = 0; r < ranks; ++r) {
      bool representative = true;
      for (const MeshAxis &a : mesh.axes) {
        bool used = llvm::any_of(s.dims, [&](const auto &d) {
          return llvm::is_contained(d, a.name);
        });
        if (!used && !llvm::is_contained(s.partial, a.name) &&
            mesh.coord(r, a.name) != 0)
          representative = false;
      }
      if (!representative)
        continue;
      Block b = blockOf(local, s, mesh, r);
      const HostTensor &x = vals[r][v];
      forEachInBlock(
          local.shape, b.global, b.offsets,
          [&](int64_t j, int64_t gi) { y.set(gi, y.get(gi) + x.get(j)); });
    }
    outs.push_back(std::move(y));
  }
  return outs;
}

} // namespace strata::spmdtest
