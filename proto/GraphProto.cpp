//===- GraphProto.cpp - ir::Graph <-> strata.pb.Graph ---------------------===//
#include "proto/GraphProto.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

namespace strata {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "invalid graph proto: " + msg);
}

// The proto enum mirrors ir::DType with values shifted by one (0 = unset).
pb::DType dtypeToProto(DType t) { return pb::DType(int(t) + 1); }

std::optional<DType> dtypeFromProto(pb::DType t) {
  int i = int(t) - 1;
  if (i < 0 || i > int(DType::I1))
    return std::nullopt;
  return DType(i);
}

void attrsToProto(const Attrs &attrs,
                  google::protobuf::RepeatedPtrField<pb::Attribute> *out) {
  for (const auto &[name, value] : attrs) {
    pb::Attribute *a = out->Add();
    a->set_name(name);
    if (auto *i = std::get_if<int64_t>(&value))
      a->set_i(*i);
    else if (auto *f = std::get_if<double>(&value))
      a->set_f(*f);
    else if (auto *b = std::get_if<bool>(&value))
      a->set_b(*b);
    else if (auto *s = std::get_if<std::string>(&value))
      a->set_s(*s);
    else if (auto *l = std::get_if<IntList>(&value))
      a->mutable_ints()->mutable_values()->Add(l->begin(), l->end());
    else if (auto *l = std::get_if<StrList>(&value))
      for (const std::string &s : *l)
        a->mutable_strs()->add_values(s);
  }
}

llvm::Expected<Attrs>
attrsFromProto(const google::protobuf::RepeatedPtrField<pb::Attribute> &in,
               const llvm::Twine &where) {
  Attrs attrs;
  for (const pb::Attribute &a : in) {
    if (a.name().empty())
      return err(where + ": attribute without a name");
    if (attrs.has(a.name()))
      return err(where + ": duplicate attribute '" + a.name() + "'");
    switch (a.value_case()) {
    case pb::Attribute::kI:
      attrs.set(a.name(), a.i());
      break;
    case pb::Attribute::kF:
      attrs.set(a.name(), a.f());
      break;
    case pb::Attribute::kB:
      attrs.set(a.name(), a.b());
      break;
    case pb::Attribute::kS:
      attrs.set(a.name(), a.s());
      break;
    case pb::Attribute::kInts:
      attrs.set(a.name(),
                IntList(a.ints().values().begin(), a.ints().values().end()));
      break;
    case pb::Attribute::kStrs:
      attrs.set(a.name(),
                StrList(a.strs().values().begin(), a.strs().values().end()));
      break;
    case pb::Attribute::VALUE_NOT_SET:
      return err(where + ": attribute '" + a.name() + "' has no value");
    }
  }
  return attrs;
}

} // namespace

pb::Sharding shardingToProto(const Sharding &s) {
  pb::Sharding out;
  for (const auto &dim : s.dims) {
    pb::Sharding::Dim *d = out.add_dims();
    for (const std::string &axis : dim)
      d->add_axes(axis);
  }
  for (const std::string &axis : s.partial)
    out.add_partial(axis);
  return out;
}

Sharding shardingFromProto(const pb::Sharding &p) {
  Sharding s;
  for (const pb::Sharding::Dim &d : p.dims())
    s.dims.emplace_back(d.axes().begin(), d.axes().end());
  s.partial.assign(p.partial().begin(), p.partial().end());
  return s;
}

namespace {

void valueToProto(const Value &v, pb::Value *out) {
  out->set_name(v.name);
  out->mutable_type()->set_dtype(dtypeToProto(v.type.dtype));
  out->mutable_type()->mutable_shape()->Add(v.type.shape.begin(),
                                            v.type.shape.end());
  if (v.sharding)
    *out->mutable_sharding() = shardingToProto(*v.sharding);
  attrsToProto(v.attrs, out->mutable_attrs());
}

// The parts of a Value that a proto carries, checked.
struct ValueParts {
  std::string name;
  TensorType type;
  std::optional<Sharding> sharding;
  Attrs attrs;
};

llvm::Expected<ValueParts> valueFromProto(const pb::Value &p,
                                          llvm::StringSet<> &names) {
  ValueParts v;
  v.name = p.name();
  if (v.name.empty())
    return err("a value has no name");
  if (!names.insert(v.name).second)
    return err("duplicate value name %" + v.name);
  auto dt = dtypeFromProto(p.type().dtype());
  if (!dt)
    return err("%" + v.name + " has an unknown dtype (" +
               llvm::Twine(int(p.type().dtype())) + ")");
  v.type.dtype = *dt;
  for (int64_t d : p.type().shape()) {
    if (d < 0)
      return err("%" + v.name + " has a negative dim (" + llvm::Twine(d) + ")");
    v.type.shape.push_back(d);
  }
  if (p.has_sharding())
    v.sharding = shardingFromProto(p.sharding());
  auto attrs = attrsFromProto(p.attrs(), "%" + v.name);
  if (!attrs)
    return attrs.takeError();
  v.attrs = std::move(*attrs);
  return v;
}

} // namespace

pb::Mesh meshToProto(const Mesh &m) {
  pb::Mesh p;
  for (const MeshAxis &a : m.axes) {
    pb::MeshAxis *axis = p.add_axes();
    axis->set_name(a.name);
    axis->set_size(a.size);
  }
  return p;
}

llvm::Expected<Mesh> meshFromProto(const pb::Mesh &p) {
  Mesh m;
  for (const pb::MeshAxis &a : p.axes()) {
    if (a.name().empty() || a.size() < 1)
      return err("mesh axis '" + a.name() + "' needs a name and a size >= 1");
    if (m.axisIndex(a.name()) >= 0)
      return err("duplicate mesh axis '" + a.name() + "'");
    m.axes.push_back({a.name(), a.size()});
  }
  return m;
}

pb::Graph graphToProto(const Graph &g) {
  pb::Graph p;
  p.set_name(g.name);
  if (g.mesh)
    *p.mutable_mesh() = meshToProto(*g.mesh);
  p.set_partitioned(g.partitioned);
  // Proto numbering: inputs first, then node results in order.
  llvm::DenseMap<ValueId, uint32_t> index;
  uint32_t next = 0;
  for (ValueId v : g.inputs()) {
    index[v] = next++;
    valueToProto(g.value(v), p.add_inputs());
  }
  for (const Node &n : g.nodes()) {
    pb::Node *pn = p.add_nodes();
    pn->set_op(opName(n.op).str());
    for (ValueId v : n.operands)
      pn->add_operands(index.lookup(v));
    for (ValueId v : n.results) {
      index[v] = next++;
      valueToProto(g.value(v), pn->add_results());
    }
    attrsToProto(n.attrs, pn->mutable_attrs());
    pn->set_scope(n.scope);
    if (n.body)
      *pn->mutable_body() = graphToProto(*n.body);
  }
  for (ValueId v : g.outputs())
    p.add_outputs(index.lookup(v));
  return p;
}

llvm::Expected<Graph> graphFromProto(const pb::Graph &p) {
  Graph g;
  g.name = p.name();
  if (p.has_mesh()) {
    auto mesh = meshFromProto(p.mesh());
    if (!mesh)
      return mesh.takeError();
    g.mesh = std::move(*mesh);
  }
  g.partitioned = p.partitioned();
  llvm::StringSet<> names;
  std::vector<ValueId> ids; // proto index -> ValueId
  auto place = [&](ValueId id, ValueParts &v) {
    g.value(id).sharding = std::move(v.sharding);
    ids.push_back(id);
  };
  for (const pb::Value &in : p.inputs()) {
    auto v = valueFromProto(in, names);
    if (!v)
      return v.takeError();
    place(g.addInput(v->name, v->type, std::move(v->attrs)), *v);
  }
  for (int ni = 0; ni < p.nodes_size(); ++ni) {
    const pb::Node &n = p.nodes(ni);
    std::string where = "node " + std::to_string(ni) + " ('" + n.op() + "')";
    auto op = parseOpName(n.op());
    if (!op)
      return err(where + ": unknown op '" + n.op() + "'");
    int wantOperands = opNumOperands(*op), wantResults = opNumResults(*op);
    if (wantOperands >= 0 && n.operands_size() != wantOperands)
      return err(where + ": takes " + llvm::Twine(wantOperands) +
                 " operands, got " + llvm::Twine(n.operands_size()));
    if (wantResults >= 0 && n.results_size() != wantResults)
      return err(where + ": has " + llvm::Twine(wantResults) +
                 " results, got " + llvm::Twine(n.results_size()));
    llvm::SmallVector<ValueId, 4> operands;
    for (uint32_t o : n.operands()) {
      if (o >= ids.size())
        return err(where + ": operand index " + llvm::Twine(o) +
                   " does not name a value defined before it");
      operands.push_back(ids[o]);
    }
    llvm::SmallVector<ValueParts, 1> results;
    llvm::SmallVector<TensorType, 1> types;
    llvm::SmallVector<std::string, 1> resultNames;
    for (const pb::Value &r : n.results()) {
      auto v = valueFromProto(r, names);
      if (!v)
        return v.takeError();
      if (!v->attrs.empty())
        return err(where + ": result %" + v->name +
                   " has attributes (only graph inputs may)");
      types.push_back(v->type);
      resultNames.push_back(v->name);
      results.push_back(std::move(*v));
    }
    auto attrs = attrsFromProto(n.attrs(), where);
    if (!attrs)
      return attrs.takeError();
    int32_t id = g.addNode(*op, operands, types, std::move(*attrs), n.scope(),
                           resultNames);
    if (n.has_body()) {
      auto body = graphFromProto(n.body());
      if (!body)
        return err(where + ": body: " + toString(body.takeError()));
      g.node(id).body = std::make_shared<const Graph>(std::move(*body));
    }
    for (size_t r = 0; r < results.size(); ++r)
      place(g.node(id).results[r], results[r]);
  }
  for (uint32_t o : p.outputs()) {
    if (o >= ids.size())
      return err("output index " + llvm::Twine(o) + " out of range (" +
                 llvm::Twine(ids.size()) + " values)");
    g.addOutput(ids[o]);
  }
  return g;
}

} // namespace strata
