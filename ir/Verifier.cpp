//===- Verifier.cpp - Graph invariants
//-------------------------------------===//
//
// The verifier runs after every pass in tests, so its messages point at the
// broken node by its results, op and scope. The attribute-kind table below
// lists what the op rules (shape inference, passes, kernels) read per op.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"

#include "llvm/ADT/StringSet.h"

namespace strata {

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

enum class AttrKind { Int, Float, Bool, String, Ints, Strings };
struct AttrSpec {
  const char *name;
  AttrKind kind;
};
using K = AttrKind;

// The attributes each op reads, as documented in Ops.def.
llvm::ArrayRef<AttrSpec> attrSpecs(OpKind k) {
  static constexpr AttrSpec kGelu[] = {{"approx", K::String}};
  static constexpr AttrSpec kScale[] = {{"value", K::Float}};
  static constexpr AttrSpec kCast[] = {{"dtype", K::String}};
  static constexpr AttrSpec kFill[] = {
      {"value", K::Float}, {"shape", K::Ints}, {"dtype", K::String}};
  static constexpr AttrSpec kIota[] = {
      {"shape", K::Ints}, {"dim", K::Int}, {"dtype", K::String}};
  static constexpr AttrSpec kReduce[] = {{"axes", K::Ints},
                                         {"keepdim", K::Bool}};
  static constexpr AttrSpec kMatMul[] = {{"transpose_a", K::Bool},
                                         {"transpose_b", K::Bool}};
  static constexpr AttrSpec kShape[] = {{"shape", K::Ints}};
  static constexpr AttrSpec kPerm[] = {{"perm", K::Ints}};
  static constexpr AttrSpec kSlice[] = {
      {"dim", K::Int}, {"start", K::Int}, {"size", K::Int}};
  static constexpr AttrSpec kDim[] = {{"dim", K::Int}};
  static constexpr AttrSpec kGather[] = {{"vocab_start", K::Int}};
  static constexpr AttrSpec kScatter[] = {{"rows", K::Int},
                                          {"vocab_start", K::Int}};
  static constexpr AttrSpec kNorm[] = {{"eps", K::Float}};
  static constexpr AttrSpec kAttention[] = {
      {"causal", K::Bool}, {"scale", K::Float}, {"window", K::Int}};
  static constexpr AttrSpec kRope[] = {{"theta", K::Float},
                                       {"inverse", K::Bool},
                                       {"pos_offset", K::Int},
                                       {"scaling", K::String},
                                       {"factor", K::Float},
                                       {"low_freq_factor", K::Float},
                                       {"high_freq_factor", K::Float},
                                       {"original_max_positions", K::Int}};
  static constexpr AttrSpec kDropout[] = {{"p", K::Float}, {"stream", K::Int}};
  static constexpr AttrSpec kCrossEntropy[] = {{"vocab_start", K::Int}};
  static constexpr AttrSpec kAdamW[] = {{"beta1", K::Float},
                                        {"beta2", K::Float},
                                        {"eps", K::Float},
                                        {"weight_decay", K::Float}};
  static constexpr AttrSpec kAllReduce[] = {{"axes", K::Strings},
                                            {"reduce", K::String}};
  static constexpr AttrSpec kGatherScatter[] = {{"axes", K::Strings},
                                                {"dim", K::Int}};
  static constexpr AttrSpec kAllToAll[] = {
      {"axes", K::Strings}, {"split_dim", K::Int}, {"concat_dim", K::Int}};
  static constexpr AttrSpec kBroadcastFrom[] = {{"axes", K::Strings},
                                                {"root", K::Int}};
  static constexpr AttrSpec kShardSlice[] = {{"dim", K::Int},
                                             {"axes", K::Strings}};
  static constexpr AttrSpec kOneHot[] = {{"classes", K::Int},
                                         {"dtype", K::String}};
  static constexpr AttrSpec kSend[] = {{"peer", K::Int}};
  static constexpr AttrSpec kRecv[] = {
      {"peer", K::Int}, {"shape", K::Ints}, {"dtype", K::String}};
  static constexpr AttrSpec kFused[] = {{"kernel", K::String}};

  switch (k) {
  case OpKind::Neg:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Silu:
  case OpKind::Square:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Softmax:
  case OpKind::SoftmaxGrad:
    return {};
  case OpKind::Gelu:
  case OpKind::GeluGrad:
    return kGelu;
  case OpKind::Scale:
    return kScale;
  case OpKind::Cast:
    return kCast;
  case OpKind::Fill:
    return kFill;
  case OpKind::Iota:
    return kIota;
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean:
    return kReduce;
  case OpKind::MatMul:
    return kMatMul;
  case OpKind::Reshape:
  case OpKind::Broadcast:
    return kShape;
  case OpKind::Transpose:
    return kPerm;
  case OpKind::Slice:
    return kSlice;
  case OpKind::Concat:
    return kDim;
  case OpKind::Gather:
    return kGather;
  case OpKind::ScatterAdd:
    return kScatter;
  case OpKind::LayerNorm:
  case OpKind::LayerNormGrad:
  case OpKind::RmsNorm:
  case OpKind::RmsNormGrad:
    return kNorm;
  case OpKind::Attention:
  case OpKind::AttentionGrad:
    return kAttention;
  case OpKind::Rope:
    return kRope;
  case OpKind::Dropout:
  case OpKind::DropoutGrad:
    return kDropout;
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad:
    return kCrossEntropy;
  case OpKind::AdamWUpdate:
    return kAdamW;
  case OpKind::AllReduce:
    return kAllReduce;
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
    return kGatherScatter;
  case OpKind::AllToAll:
    return kAllToAll;
  case OpKind::BroadcastFrom:
    return kBroadcastFrom;
  case OpKind::ShardSlice:
    return kShardSlice;
  case OpKind::PickLabel:
    return {};
  case OpKind::OneHot:
    return kOneHot;
  case OpKind::Send:
    return kSend;
  case OpKind::Recv:
    return kRecv;
  case OpKind::Fused:
    return kFused;
  }
  return {};
}

const char *kindName(AttrKind k) {
  switch (k) {
  case K::Int:
    return "an int";
  case K::Float:
    return "a float";
  case K::Bool:
    return "a bool";
  case K::String:
    return "a string";
  case K::Ints:
    return "an int list";
  case K::Strings:
    return "a string list";
  }
  return "?";
}

bool hasKind(const AttrValue &v, AttrKind k) {
  auto emptyList = [&] {
    if (auto *l = std::get_if<IntList>(&v))
      return l->empty();
    if (auto *l = std::get_if<StrList>(&v))
      return l->empty();
    return false;
  };
  switch (k) {
  case K::Int:
    return std::holds_alternative<int64_t>(v);
  case K::Float: // ints read as floats (Attrs::getFloat)
    return std::holds_alternative<double>(v) ||
           std::holds_alternative<int64_t>(v);
  case K::Bool:
    return std::holds_alternative<bool>(v);
  case K::String:
    return std::holds_alternative<std::string>(v);
  case K::Ints:
    return std::holds_alternative<IntList>(v) || emptyList();
  case K::Strings:
    return std::holds_alternative<StrList>(v) || emptyList();
  }
  return false;
}

llvm::Error checkKinds(const Attrs &attrs, llvm::ArrayRef<AttrSpec> specs) {
  for (const AttrSpec &spec : specs) {
    const AttrValue *v = attrs.get(spec.name);
    if (v && !hasKind(*v, spec.kind)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      printAttrValue(os, *v);
      return err(llvm::Twine("attribute '") + spec.name + "' must be " +
                 kindName(spec.kind) + " (got " + text + ")");
    }
  }
  return llvm::Error::success();
}

// What the parser accepts of a type (graphs from protos or passes may hold
// others): positive dims, a byte size within int64.
llvm::Error checkType(const TensorType &t) {
  if (t.isValid())
    return llvm::Error::success();
  return err("type " + t.str() +
             " is invalid (dims must be positive and its size fit in 2^63 - 1 "
             "bytes)");
}

// Value and graph names are printed bare after % and @.
bool isPrintableName(llvm::StringRef name) {
  return !name.empty() && llvm::all_of(name, [](char c) {
    return std::isalnum(uint8_t(c)) || c == '_' || c == '.';
  });
}

bool isIdent(llvm::StringRef name) {
  return !name.empty() && !std::isdigit(uint8_t(name[0])) &&
         llvm::all_of(
             name, [](char c) { return std::isalnum(uint8_t(c)) || c == '_'; });
}

// `%a, %b = op (scope)` or `send(%x) (scope)`.
std::string describeNode(const Graph &g, const Node &n) {
  std::string s;
  for (size_t i = 0; i < n.results.size(); ++i)
    s += (i ? ", %" : "%") + g.value(n.results[i]).name;
  if (n.results.empty()) {
    s = opName(n.op).str() + "(";
    for (size_t i = 0; i < n.operands.size(); ++i) {
      ValueId v = n.operands[i];
      bool valid = v >= 0 && size_t(v) < g.numValues();
      s += (i ? ", %" : "%") + (valid ? g.value(v).name : "?");
    }
    s += ")";
  } else {
    s += " = " + opName(n.op).str();
  }
  if (!n.scope.empty())
    s += " (" + n.scope + ")";
  return s;
}

llvm::Error verifyMesh(const Mesh &m) {
  llvm::StringSet<> seen;
  for (const MeshAxis &a : m.axes) {
    if (!isIdent(a.name))
      return err("mesh axis name '" + a.name + "' is not an identifier");
    if (a.size < 1)
      return err("mesh axis '" + a.name + "' has size " +
                 std::to_string(a.size) + " (must be >= 1)");
    if (!seen.insert(a.name).second)
      return err("mesh axis '" + a.name + "' appears twice");
  }
  return llvm::Error::success();
}

class GraphVerifier {
public:
  explicit GraphVerifier(const Graph &g) : g_(g) {}
  llvm::Error run();

private:
  llvm::Error checkName(ValueId v);
  llvm::Error checkNode(int32_t index);
  const Mesh *mesh() const { return g_.mesh ? &*g_.mesh : nullptr; }

  const Graph &g_;
  llvm::StringSet<> names_;
  llvm::SmallVector<bool> defined_;
};

llvm::Error GraphVerifier::checkName(ValueId v) {
  const std::string &name = g_.value(v).name;
  if (!isPrintableName(name))
    return err("value name '" + name +
               "' is not printable (use letters, digits, '_' and '.')");
  if (!names_.insert(name).second)
    return err("value name %" + name + " is defined twice");
  return llvm::Error::success();
}

llvm::Error GraphVerifier::checkNode(int32_t index) {
  const Node &n = g_.node(index);
  auto fail = [&](const llvm::Twine &msg) {
    return err(describeNode(g_, n) + ": " + msg);
  };
  llvm::SmallVector<TensorType, 4> operandTypes;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    ValueId v = n.operands[i];
    if (v < 0 || size_t(v) >= g_.numValues())
      return fail("operand " + llvm::Twine(i) + " is not a value of the graph");
    if (!defined_[v])
      return fail("operand " + llvm::Twine(i) + " (%" + g_.value(v).name +
                  ") is used before it is defined");
    operandTypes.push_back(g_.type(v));
  }
  if (n.scope.find('\n') != std::string::npos ||
      llvm::StringRef(n.scope).trim() != n.scope)
    return fail("scope has a newline or surrounding spaces");
  if (int want = opNumResults(n.op); want >= 0 && int(n.results.size()) != want)
    return fail("has " + llvm::Twine(n.results.size()) +
                " results, the op has " + llvm::Twine(want));
  if (auto e = verifyNodeAttrs(n.op, n.attrs))
    return fail(toString(std::move(e)));
  if (n.op != OpKind::Fused && n.body)
    return fail("only fused nodes have a body");
  auto inferred = n.op == OpKind::Fused
                      ? verifyFusedNode(n.attrs, n.body.get(), operandTypes)
                      : inferResultTypes(n.op, operandTypes, n.attrs, mesh());
  if (!inferred)
    return fail(toString(inferred.takeError()));
  if (n.results.size() != inferred->size())
    return fail("has " + llvm::Twine(n.results.size()) +
                " results, its body returns " + llvm::Twine(inferred->size()));
  for (size_t i = 0; i < n.results.size(); ++i) {
    ValueId r = n.results[i];
    const Value &val = g_.value(r);
    if (val.defNode != index || val.resultIndex != int32_t(i))
      return fail("result " + llvm::Twine(i) + " (%" + val.name +
                  ") does not point back at its node");
    if (auto e = checkName(r))
      return fail(toString(std::move(e)));
    if (auto e = checkType(val.type))
      return fail("result %" + val.name + ": " + toString(std::move(e)));
    if (val.type != (*inferred)[i])
      return fail("result %" + val.name + " has type " + val.type.str() +
                  " but shape inference gives " + (*inferred)[i].str());
    if (val.sharding)
      if (auto e =
              verifySharding(*val.sharding, val.type, mesh(), g_.partitioned))
        return fail("result %" + val.name + ": " + toString(std::move(e)));
    if (!val.attrs.empty())
      return fail("result %" + val.name + " has input attributes");
    defined_[r] = true;
  }
  return llvm::Error::success();
}

llvm::Error GraphVerifier::run() {
  if (!isPrintableName(g_.name))
    return err("graph name '" + g_.name +
               "' is not printable (use letters, digits, '_' and '.')");
  if (g_.mesh)
    if (auto e = verifyMesh(*g_.mesh))
      return e;
  defined_.assign(g_.numValues(), false);
  for (ValueId v : g_.inputs()) {
    const Value &val = g_.value(v);
    auto fail = [&](const llvm::Twine &msg) {
      return err("input %" + val.name + ": " + msg);
    };
    if (!val.isInput())
      return fail("is listed as an input but has a node");
    if (auto e = checkName(v))
      return e;
    if (auto e = checkType(val.type))
      return fail(toString(std::move(e)));
    if (auto e = verifyInputAttrs(val.attrs))
      return fail(toString(std::move(e)));
    if (val.sharding)
      if (auto e =
              verifySharding(*val.sharding, val.type, mesh(), g_.partitioned))
        return fail(toString(std::move(e)));
    defined_[v] = true;
  }
  for (int32_t i = 0; i < int32_t(g_.nodes().size()); ++i)
    if (auto e = checkNode(i))
      return e;
  for (size_t i = 0; i < g_.outputs().size(); ++i) {
    ValueId v = g_.outputs()[i];
    if (v < 0 || size_t(v) >= g_.numValues() || !defined_[v])
      return err("output " + llvm::Twine(i) +
                 " is not an input or a node result of the graph");
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error verifyNodeAttrs(OpKind op, const Attrs &attrs) {
  // What passes read on any node: the autodiff and recompute markers
  // (passes/autodiff/Autodiff.h, passes/recompute/Recompute.h) and a
  // collective's provenance (passes/spmd/CollectiveReport.cpp). A wrong kind
  // would abort in Attrs::get*; found by the pass_pipeline fuzzer.
  static constexpr AttrSpec kAnyNode[] = {{"bwd", K::Bool},
                                          {"recompute", K::Bool},
                                          {"src", K::String},
                                          {"reason", K::String}};
  if (auto e = checkKinds(attrs, kAnyNode))
    return e;
  return checkKinds(attrs, attrSpecs(op));
}

llvm::Expected<llvm::SmallVector<TensorType, 1>>
verifyFusedNode(const Attrs &attrs, const Graph *bodyPtr,
                llvm::ArrayRef<TensorType> operandTypes) {
  if (!bodyPtr)
    return err("fused node has no body");
  const Graph &body = *bodyPtr;
  std::string kernel = attrs.getString("kernel");
  if (!isIdent(kernel))
    return err(
        "fused needs a 'kernel' attribute that is an identifier (got \"" +
        kernel + "\")");
  if (body.name != kernel)
    return err("body @" + body.name + " differs from kernel \"" + kernel +
               "\"");
  if (body.inputs().size() != operandTypes.size())
    return err("body takes " + llvm::Twine(body.inputs().size()) +
               " inputs, the node has " + llvm::Twine(operandTypes.size()) +
               " operands");
  for (size_t i = 0; i < operandTypes.size(); ++i)
    if (body.type(body.inputs()[i]) != operandTypes[i])
      return err("body input %" + body.value(body.inputs()[i]).name + " is " +
                 body.type(body.inputs()[i]).str() + ", operand " +
                 llvm::Twine(i) + " is " + operandTypes[i].str());
  if (body.outputs().empty()) // as the parser requires: no text without one
    return err("fused needs at least one result (a body with no outputs is "
               "dead code)");
  if (body.mesh)
    return err("a fused body has no mesh");
  for (const Node &m : body.nodes())
    if (m.op == OpKind::Fused || isCollective(m.op) || isPartitionOp(m.op))
      return err(
          "body op " + opName(m.op) +
          " is not allowed (no nested fused, mesh or rank-dependent ops)");
  if (auto e = verifyGraph(body))
    return err("in body: " + toString(std::move(e)));
  llvm::SmallVector<TensorType, 1> types;
  for (ValueId v : body.outputs())
    types.push_back(body.type(v));
  return types;
}

llvm::Error verifyInputAttrs(const Attrs &attrs) {
  static constexpr AttrSpec kInput[] = {
      {"param", K::Bool}, {"init", K::String}, {"std", K::Float}};
  for (llvm::StringRef reserved : {"shard", "partial"})
    if (attrs.has(reserved))
      return err("attribute name '" + reserved +
                 "' is reserved for the input's sharding");
  return checkKinds(attrs, kInput);
}

llvm::Error verifySharding(const Sharding &s, const TensorType &type,
                           const Mesh *mesh, bool localType) {
  if (int64_t(s.dims.size()) != type.rank())
    return err("sharding has " + llvm::Twine(s.dims.size()) +
               " dims but the type " + type.str() + " has rank " +
               llvm::Twine(type.rank()));
  llvm::StringSet<> used;
  auto checkAxis = [&](const std::string &axis) -> llvm::Error {
    if (!mesh)
      return err("sharding uses mesh axis '" + axis +
                 "' but the graph has no mesh");
    if (mesh->axisIndex(axis) < 0)
      return err("unknown mesh axis '" + axis + "'");
    if (!used.insert(axis).second)
      return err("mesh axis '" + axis + "' is used twice in one sharding");
    return llvm::Error::success();
  };
  for (size_t d = 0; d < s.dims.size(); ++d) {
    int64_t ways = 1;
    for (const std::string &axis : s.dims[d]) {
      if (auto e = checkAxis(axis))
        return e;
      ways *= mesh->axisSize(axis);
    }
    if (!localType && type.shape[d] % ways)
      return err("dim " + llvm::Twine(d) + " of size " +
                 llvm::Twine(type.shape[d]) + " is not divisible by its " +
                 llvm::Twine(ways) + " shards");
  }
  for (const std::string &axis : s.partial)
    if (auto e = checkAxis(axis))
      return e;
  return llvm::Error::success();
}

llvm::Error verifyGraph(const Graph &g) { return GraphVerifier(g).run(); }

} // namespace strata
