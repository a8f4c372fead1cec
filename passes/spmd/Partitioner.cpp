//===- Partitioner.cpp - The SPMD partitioner's walk
//-----------------------===//
//
// Inputs take their seeded shardings, every node goes through its op's
// handler (the switch below covers every op of ir/Ops.def), annotated values
// are resharded to their annotation, and outputs are brought to the layout
// their consumers expect: a parameter's gradient is laid out like the
// parameter and stays partial only over the kept axes (dp).
//
//===----------------------------------------------------------------------===//
#include "passes/spmd/Handlers.h"

#include "passes/autodiff/Autodiff.h"

namespace strata::spmd {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "spmd: " + msg);
}

/// The parameter input whose gradient output `name` is (`grad.<param>`).
ValueId gradParam(const Graph &g, llvm::StringRef name) {
  if (!name.consume_front("grad."))
    return kNoValue;
  ValueId p = g.lookup(name);
  return p != kNoValue && g.value(p).isInput() && g.value(p).isParam()
             ? p
             : kNoValue;
}
} // namespace

Partitioner::Partitioner(const Graph &src, PartitionOptions options)
    : src_(src), options_(std::move(options)) {}

const Dims *Partitioner::hint(unsigned i) const {
  const auto &h = hints_[node_->results[i]];
  return h ? &*h : nullptr;
}

TensorType Partitioner::globalType(ValueId v) const {
  TensorType t = type(v);
  const Sharding &s = sharding(v);
  for (size_t d = 0; d < s.dims.size(); ++d)
    t.shape[d] *= groupSize(mesh_, s.dims[d]);
  return t;
}

const PartialOrigin *Partitioner::origin(ValueId v) const {
  auto it = origins_.find(v);
  return it == origins_.end() ? nullptr : &it->second;
}

void Partitioner::setOrigin(ValueId v, PartialOrigin o) {
  origins_[v] = std::move(o);
}

std::string Partitioner::freshName(llvm::StringRef hint) {
  std::string name = hint.str();
  for (int k = 1;
       dst_.lookup(name) != kNoValue || src_.lookup(name) != kNoValue; ++k)
    name = hint.str() + "." + std::to_string(k);
  return name;
}

llvm::Error Partitioner::fail(const llvm::Twine &msg) const {
  std::string what = node_ && !node_->results.empty()
                         ? "%" + src_.value(node_->results[0]).name + " = "
                         : std::string();
  if (node_)
    what += opName(node_->op).str() + " (" + node_->scope + "): ";
  return err(what + msg);
}

llvm::Expected<llvm::SmallVector<ValueId, 1>>
Partitioner::emit(OpKind op, llvm::ArrayRef<ValueId> operands, Attrs attrs,
                  llvm::ArrayRef<Sharding> shardings,
                  llvm::ArrayRef<std::string> names) {
  llvm::SmallVector<TensorType, 4> types;
  for (ValueId v : operands)
    types.push_back(type(v));
  auto results = inferResultTypes(op, types, attrs, &mesh_);
  if (!results)
    return fail("local " + opName(op) + ": " +
                llvm::toString(results.takeError()));
  if (results->size() != shardings.size())
    return fail("internal: " + opName(op) + " needs " +
                llvm::Twine(results->size()) + " result shardings");
  if (backward_)
    attrs.set(kBackwardAttr, true);
  std::string base = node_ && !node_->results.empty()
                         ? src_.value(node_->results[0]).name
                         : std::string("v");
  llvm::SmallVector<std::string, 3> resultNames;
  for (size_t i = 0; i < results->size(); ++i)
    resultNames.push_back(i < names.size() && !names[i].empty()
                              ? names[i]
                              : freshName(base + "." + opName(op).str()));
  int32_t n = dst_.addNode(op, operands, *results, std::move(attrs), scope_,
                           resultNames);
  llvm::SmallVector<ValueId, 1> out(dst_.node(n).results);
  for (size_t i = 0; i < out.size(); ++i) {
    if (auto e = verifySharding(shardings[i], type(out[i]), &mesh_,
                                /*localType=*/true))
      return fail("internal: result sharding " + shardingStr(shardings[i]) +
                  ": " + llvm::toString(std::move(e)));
    dst_.value(out[i]).sharding = shardings[i];
  }
  return out;
}

llvm::Expected<ValueId>
Partitioner::emit1(OpKind op, llvm::ArrayRef<ValueId> operands, Attrs attrs,
                   const Sharding &sharding, const std::string &name) {
  auto r = emit(op, operands, std::move(attrs), {sharding}, {name});
  if (!r)
    return r.takeError();
  return r->front();
}

llvm::Expected<llvm::SmallVector<ValueId, 1>>
Partitioner::emitResults(OpKind op, llvm::ArrayRef<ValueId> operands,
                         Attrs attrs, llvm::ArrayRef<Sharding> shardings) {
  llvm::SmallVector<std::string, 3> names;
  for (ValueId r : node_->results)
    names.push_back(src_.value(r).name);
  auto out = emit(op, operands, std::move(attrs), shardings, names);
  if (!out)
    return out.takeError();
  for (size_t i = 0; i < out->size(); ++i)
    if (auto e = bind(i, (*out)[i]))
      return e;
  return out;
}

llvm::Error Partitioner::bind(unsigned i, ValueId v) {
  ValueId r = node_->results[i];
  TensorType want = localType(src_.type(r), sharding(v), mesh_);
  if (type(v) != want || globalType(v) != src_.type(r))
    return fail("internal: %" + dst_.value(v).name + " has local type " +
                type(v).str() + " but " + src_.type(r).str() + " under " +
                shardingStr(sharding(v)) + " is " + want.str());
  map_[r] = v;
  return llvm::Error::success();
}

llvm::Error Partitioner::partitionNode() {
  const Node &n = *node_;
  switch (n.op) {
  case OpKind::Neg:
  case OpKind::Scale:
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad:
  case OpKind::Div:
  case OpKind::Dropout:
  case OpKind::DropoutGrad:
    return partitionElementwise(*this, Linearity::First);
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::Silu:
  case OpKind::Square:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::AdamWUpdate:
    return partitionElementwise(*this, Linearity::None);
  case OpKind::Cast:
    // Widening is exact, so a partial sum passes and is reduced in the wider
    // type: a 16-bit gradient partial over dp reaches the optimizer's fp32
    // reduction, once per step (Megatron's main_grad). A narrowing cast
    // would move the reduction to fewer bits: reduce first.
    return partitionElementwise(
        *this, dtypeBytes(src_.type(n.results[0]).dtype) >=
                       dtypeBytes(src_.type(n.operands[0]).dtype)
                   ? Linearity::First
                   : Linearity::None);
  case OpKind::Add:
  case OpKind::Sub:
    return partitionElementwise(*this, Linearity::Sum);
  case OpKind::Mul:
    return partitionElementwise(*this, Linearity::OneFactor);
  case OpKind::Fill:
  case OpKind::Iota:
    return partitionCreation(*this);
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean:
    return partitionReduce(*this);
  case OpKind::MatMul:
    return partitionMatMul(*this);
  case OpKind::Reshape:
    return partitionReshape(*this);
  case OpKind::Transpose:
    return partitionTranspose(*this);
  case OpKind::Broadcast:
    return partitionBroadcast(*this);
  case OpKind::Slice:
    return partitionSlice(*this);
  case OpKind::Concat:
    return partitionConcat(*this);
  case OpKind::Gather:
    return partitionGather(*this);
  case OpKind::ScatterAdd:
    return partitionScatterAdd(*this);
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
  case OpKind::Softmax:
  case OpKind::SoftmaxGrad:
    return partitionNorm(*this);
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
    return partitionNormGrad(*this);
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    return partitionAttention(*this);
  case OpKind::Rope:
    return partitionRope(*this);
  case OpKind::CrossEntropy:
    return partitionCrossEntropy(*this);
  case OpKind::CrossEntropyGrad:
    return partitionCrossEntropyGrad(*this);
  case OpKind::AllReduce:
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
  case OpKind::BroadcastFrom:
  case OpKind::Send:
  case OpKind::Recv:
  case OpKind::ShardSlice:
  case OpKind::PickLabel:
  case OpKind::OneHot:
    return fail("the graph is already partitioned (spmd partitions the "
                "logical graph once, before the pipeline and later passes)");
  case OpKind::Fused:
    return fail("the graph is already fused (fusion runs after spmd)");
  }
  return fail("no partitioning rule");
}

llvm::Error Partitioner::applyAnnotations() {
  for (unsigned i = 0; i < node_->results.size(); ++i) {
    const Value &r = src_.value(node_->results[i]);
    if (!r.sharding)
      continue;
    Sharding want = dropTrivialAxes(*r.sharding, mesh_);
    auto v = reshard(map_[node_->results[i]], want,
                     "the sharding annotation on %" + r.name);
    if (!v)
      return v.takeError();
    map_[node_->results[i]] = *v;
  }
  return llvm::Error::success();
}

Sharding Partitioner::outputSharding(ValueId srcV,
                                     const Sharding &current) const {
  Sharding want = current;
  ValueId p = gradParam(src_, src_.value(srcV).name);
  if (p != kNoValue)
    want.dims = sharding(map_[p]).dims;
  llvm::erase_if(want.partial, [&](const std::string &a) {
    return !llvm::is_contained(options_.keepPartial, a);
  });
  return want;
}

llvm::Error Partitioner::partitionOutputs() {
  node_ = nullptr;
  llvm::SmallVector<ValueId, 8> outs;
  for (ValueId o : src_.outputs()) {
    ValueId v = map_[o];
    Sharding want = outputSharding(o, sharding(v));
    if (want == sharding(v)) {
      outs.push_back(v);
      continue;
    }
    const Value &sv = src_.value(o);
    scope_ =
        sv.isInput() ? std::string("outputs") : src_.node(sv.defNode).scope;
    backward_ = !sv.isInput() && isBackward(src_.node(sv.defNode));
    ValueId param = gradParam(src_, sv.name);
    std::string kept =
        options_.keepPartial.empty()
            ? std::string("no partial sums")
            : "partial only over " + axesStr(options_.keepPartial);
    auto r = reshard(v, want,
                     "output %" + sv.name + " (" +
                         (param != kNoValue ? "the layout of %" +
                                                  src_.value(param).name + ", "
                                            : std::string()) +
                         kept + ")");
    if (!r)
      return r.takeError();
    // The output keeps its name; the value before the reshard is renamed.
    if (*r != v && dst_.value(v).name == sv.name) {
      dst_.rename(v, freshName(sv.name + ".pre"));
      dst_.rename(*r, sv.name);
    }
    outs.push_back(*r);
  }
  dst_.setOutputs(outs);
  return llvm::Error::success();
}

llvm::Expected<Graph> Partitioner::run() {
  if (!src_.mesh)
    return err("the graph has no mesh (run megatron-seeds first, or write "
               "`mesh<dp=2,tp=2>` in the graph header)");
  if (src_.partitioned)
    return err("the graph is already partitioned (its types are local)");
  mesh_ = *src_.mesh;
  dst_ = Graph();
  dst_.name = src_.name;
  dst_.mesh = mesh_;
  dst_.partitioned = true;
  map_.assign(src_.numValues(), kNoValue);

  llvm::SmallVector<std::optional<Dims>, 8> needs;
  for (ValueId o : src_.outputs()) {
    ValueId p = gradParam(src_, src_.value(o).name);
    if (p != kNoValue && src_.value(p).sharding)
      needs.push_back(dropTrivialAxes(*src_.value(p).sharding, mesh_).dims);
    else
      needs.push_back(std::nullopt);
  }
  hints_ = computeHints(src_, mesh_, needs);

  for (ValueId v : src_.inputs()) {
    const Value &in = src_.value(v);
    Sharding s = in.sharding ? dropTrivialAxes(*in.sharding, mesh_)
                             : Sharding::replicated(in.type.rank());
    ValueId d = dst_.addInput(in.name, localType(in.type, s, mesh_), in.attrs);
    dst_.value(d).sharding = s;
    if (!s.partial.empty())
      setOrigin(d, {"input %" + in.name, "%" + in.name});
    map_[v] = d;
  }
  for (const Node &n : src_.nodes()) {
    node_ = &n;
    scope_ = n.scope;
    backward_ = isBackward(n);
    if (auto e = partitionNode())
      return e;
    if (auto e = applyAnnotations())
      return e;
  }
  if (auto e = partitionOutputs())
    return e;
  // In a partitioned graph a value without a sharding is replicated.
  for (size_t v = 0; v < dst_.numValues(); ++v)
    if (dst_.value(v).sharding->isReplicated())
      dst_.value(v).sharding.reset();
  return std::move(dst_);
}

} // namespace strata::spmd
