//===- GradReduction.cpp - The dp gradient reductions an optimizer implies ===//
#include "passes/pipeline/GradReduction.h"

#include "passes/pipeline/GraphCopy.h"

namespace strata {

namespace {
/// Whether input `v` of `opt` is reduced in place before the program runs.
bool reducedInPlace(const Graph &opt, ValueId v) {
  return opt.value(v).attrs.has("dp_reduce");
}

/// The unreduced local type of reduced input `v`.
TensorType unreducedType(const Graph &opt, ValueId v) {
  const Value &in = opt.value(v);
  TensorType t = in.type;
  if (in.attrs.getString("dp_reduce") == "reduce_scatter" && opt.mesh)
    t.shape[in.attrs.getInt("dp_dim")] *= opt.mesh->axisSize("dp");
  return t;
}

/// The sharding of reduced input `v` before its reduction: a partial sum
/// over dp, split over dp nowhere.
Sharding unreducedSharding(const Value &in) {
  Sharding s = in.sharding ? *in.sharding : Sharding::replicated(in.type.rank());
  for (auto &d : s.dims)
    llvm::erase_value(d, "dp");
  s.partial.push_back("dp");
  return s;
}

/// Appends v's reduction to `g` reading `from`; returns its result.
ValueId addReduction(Graph &g, const Graph &opt, ValueId v, ValueId from) {
  const Value &in = opt.value(v);
  std::string param = in.name.substr(std::string("grad.").size());
  Attrs a{{"axes", StrList{"dp"}},
          {"reason", "data-parallel gradient reduction in place, "
                     "overlapping the backward (runtime/parallel/"
                     "GradReducer.h)"},
          {"src", "optimizer." + param}};
  bool scatter = in.attrs.getString("dp_reduce") == "reduce_scatter";
  if (scatter)
    a.set("dim", in.attrs.getInt("dp_dim"));
  else
    a.set("reduce", std::string("sum"));
  int32_t n = g.addNode(scatter ? OpKind::ReduceScatter : OpKind::AllReduce,
                        {from}, {in.type}, a, "optimizer." + param,
                        {g.freshName(in.name + ".reduced")});
  ValueId out = g.node(n).results[0];
  g.value(out).sharding = in.sharding;
  return out;
}
} // namespace

Graph gradientReductions(const Graph &opt) {
  Graph g = emptyLike(opt);
  g.name = opt.name + "_gradient_reductions";
  std::vector<ValueId> outs;
  for (ValueId v : opt.inputs()) {
    if (!reducedInPlace(opt, v))
      continue;
    ValueId in = g.addInput(opt.value(v).name, unreducedType(opt, v));
    g.value(in).sharding = unreducedSharding(opt.value(v));
    outs.push_back(addReduction(g, opt, v, in));
  }
  g.setOutputs(outs);
  return g;
}

Graph withGradientReductions(const Graph &opt) {
  Graph g = emptyLike(opt);
  g.name = opt.name;
  GraphCopier c(opt, g);
  std::vector<std::pair<ValueId, ValueId>> reduced;
  for (ValueId v : opt.inputs()) {
    if (!reducedInPlace(opt, v)) {
      c.addInput(v);
      continue;
    }
    ValueId in = g.addInput(opt.value(v).name, unreducedType(opt, v));
    g.value(in).sharding = unreducedSharding(opt.value(v));
    reduced.push_back({v, in});
  }
  for (auto [v, in] : reduced)
    c.setMapped(v, addReduction(g, opt, v, in));
  for (size_t i = 0; i < opt.nodes().size(); ++i)
    c.copyNode(int32_t(i));
  std::vector<ValueId> outs;
  for (ValueId v : opt.outputs())
    outs.push_back(c.mapped(v));
  g.setOutputs(outs);
  return g;
}

} // namespace strata
