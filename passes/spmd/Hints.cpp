//===- Hints.cpp - Layouts pulled backward from annotations and outputs
//----===//
//
// The partitioner decides in program order, from operands. Two decisions need
// to know what comes later: whether a pending partial sum should be reduced
// whole (all_reduce) or straight into a split layout (reduce_scatter, e.g. the
// sequence-parallel residual stream), and which layout a value without
// operands (fill, a scatter_add's rows) should be created in. Hints answer
// them: a sweep in reverse program order carries annotated and output layouts
// back through ops that keep their operands' dims, to operands used by that
// op only (a value with other users may be wanted whole by them).
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Partitioner.h"

namespace strata::spmd {

namespace {
/// Ops whose result dims are their operands' dims (numpy broadcasting).
bool keepsDims(OpKind k) {
  return isElementwiseUnary(k) || isElementwiseBinary(k) ||
         k == OpKind::GeluGrad || k == OpKind::SiluGrad ||
         k == OpKind::ReluGrad || k == OpKind::Dropout ||
         k == OpKind::DropoutGrad;
}
} // namespace

std::vector<std::optional<Dims>>
computeHints(const Graph &g, const Mesh &mesh,
             llvm::ArrayRef<std::optional<Dims>> outputNeeds) {
  std::vector<std::optional<Dims>> hints(g.numValues());
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (outputNeeds[i])
      hints[g.outputs()[i]] = outputNeeds[i];
  for (size_t v = 0; v < g.numValues(); ++v)
    if (g.value(v).sharding && !g.value(v).isInput())
      hints[v] = dropTrivialAxes(*g.value(v).sharding, mesh).dims;

  auto users = g.users();
  for (const Node &n : llvm::reverse(g.nodes())) {
    if (!keepsDims(n.op) || !hints[n.results[0]])
      continue;
    const Dims &h = *hints[n.results[0]];
    const Shape &shape = g.type(n.results[0]).shape;
    for (ValueId x : n.operands) {
      if (hints[x] || users[x].size() != 1)
        continue;
      const Shape &xs = g.type(x).shape;
      size_t off = shape.size() - xs.size();
      Dims dims(xs.size());
      for (size_t j = 0; j < xs.size(); ++j)
        if (xs[j] == shape[j + off])
          dims[j] = h[j + off];
      hints[x] = std::move(dims);
    }
  }
  return hints;
}

} // namespace strata::spmd
