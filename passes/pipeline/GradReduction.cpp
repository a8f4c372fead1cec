//===- GradReduction.cpp - The dp gradient reductions an optimizer implies ===//
#include "passes/pipeline/GradReduction.h"

#include "ir/Op.h"
#include "passes/pipeline/GraphCopy.h"

#include "llvm/ADT/STLExtras.h"

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
  Sharding s =
      in.sharding ? *in.sharding : Sharding::replicated(in.type.rank());
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
/// Appends output o's gather over dp to `g` reading `from` (which is renamed
/// `<name>.shard`); returns its result, named as the output.
ValueId addGather(Graph &g, const Graph &opt, size_t o, ValueId from) {
  const Value &out = opt.value(opt.outputs()[o]);
  int64_t dim = gatheredDim(opt, o);
  std::string param = out.name.substr(std::string("new.").size());
  TensorType full = out.type;
  full.shape[dim] *= opt.mesh->axisSize("dp");
  Attrs a{{"axes", StrList{"dp"}},
          {"dim", dim},
          {"reason", "distributed optimizer: every dp rank updated one shard "
                     "of %" +
                         param +
                         "; gather the parameter, overlapping the next "
                         "forward (runtime/parallel/ParamGatherer.h)"},
          {"src", "optimizer." + param}};
  g.rename(from, g.freshName(out.name + ".shard"));
  int32_t n = g.addNode(OpKind::AllGather, {from}, {full}, a,
                        "optimizer." + param, {out.name});
  ValueId r = g.node(n).results[0];
  Sharding s = *out.sharding;
  s.dims[dim].pop_back();
  if (!s.isReplicated())
    g.value(r).sharding = s;
  return r;
}
} // namespace

int64_t gatheredDim(const Graph &opt, size_t o) {
  const Value &v = opt.value(opt.outputs()[o]);
  llvm::StringRef name = v.name;
  if (!name.consume_front("new.") || name.startswith("adam_") || !v.sharding ||
      !opt.mesh)
    return -1;
  for (size_t d = 0; d < v.sharding->dims.size(); ++d)
    if (!v.sharding->dims[d].empty() && v.sharding->dims[d].back() == "dp")
      return int64_t(d);
  return -1;
}

Graph parameterGathers(const Graph &opt) {
  Graph g = emptyLike(opt);
  g.name = opt.name + "_parameter_gathers";
  std::vector<ValueId> outs;
  for (size_t o = 0; o < opt.outputs().size(); ++o) {
    if (gatheredDim(opt, o) < 0)
      continue;
    const Value &v = opt.value(opt.outputs()[o]);
    ValueId in = g.addInput(v.name, v.type);
    g.value(in).sharding = v.sharding;
    outs.push_back(addGather(g, opt, o, in));
  }
  g.setOutputs(outs);
  return g;
}

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

size_t gradientFinalNode(const Graph &g, ValueId out) {
  int32_t d = g.value(out).defNode;
  if (d < 0 || g.node(d).op == OpKind::Reshape)
    return g.nodes().size();
  for (size_t i = d + 1; i < g.nodes().size(); ++i)
    if (llvm::is_contained(g.node(i).operands, out))
      return g.nodes().size();
  return size_t(d);
}

bool usesDpAxis(const Graph &g) {
  for (const Node &n : g.nodes())
    if (isCollective(n.op) && n.attrs.has("axes") &&
        llvm::is_contained(n.attrs.getStrings("axes"), "dp"))
      return true;
  return false;
}

} // namespace strata
