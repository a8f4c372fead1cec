//===- KernelPlan.cpp - How a fused body maps onto one elementwise loop ---===//
#include "codegen/KernelPlan.h"

#include <cmath>

namespace strata::codegen {

namespace {

llvm::Error err(const Graph &body, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "kernel " + body.name + ": " + msg);
}

bool isFloatType(DType t) {
  return t == DType::F32 || t == DType::F64 || isFloat16(t);
}

// Element strides of a value of `shape` read over `domain` (right-aligned,
// numpy broadcasting): 0 along dims where the value has size 1. Operands of
// members broadcast to the members' result shape, which is the domain.
llvm::SmallVector<int64_t, 4> broadcastStrides(llvm::ArrayRef<int64_t> shape,
                                               llvm::ArrayRef<int64_t> domain) {
  llvm::SmallVector<int64_t, 4> strides(domain.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < shape.size(); ++k) {
    size_t ds = shape.size() - 1 - k, dd = domain.size() - 1 - k;
    strides[dd] = shape[ds] == 1 ? 0 : stride;
    stride *= shape[ds];
  }
  return strides;
}

// Drops size-1 dims and merges dim d into d+1 where every load's stride
// along d is its stride along d+1 times the size of d+1. With column sums
// or a row op the last dim stays its own (the columns, the rows).
void coalesce(KernelPlan &p) {
  llvm::SmallVector<int64_t, 4> dims;
  std::vector<llvm::SmallVector<int64_t, 4>> strides(p.loads.size());
  const size_t last = p.domain.size() - 1;
  for (size_t d = 0; d < p.domain.size(); ++d) {
    bool keepLast = p.wholeRows() && d == last;
    if (p.domain[d] == 1 && !keepLast)
      continue;
    bool merge = !dims.empty() && !keepLast;
    for (size_t l = 0; l < p.loads.size() && merge; ++l)
      merge = strides[l].back() == p.loads[l].strides[d] * p.domain[d];
    if (merge) {
      dims.back() *= p.domain[d];
      for (size_t l = 0; l < p.loads.size(); ++l)
        strides[l].back() = p.loads[l].strides[d];
      continue;
    }
    dims.push_back(p.domain[d]);
    for (size_t l = 0; l < p.loads.size(); ++l)
      strides[l].push_back(p.loads[l].strides[d]);
  }
  if (dims.empty()) { // a scalar or all-ones domain: one element
    dims.push_back(1);
    for (auto &s : strides)
      s.push_back(0);
  }
  p.dims = dims;
  for (size_t l = 0; l < p.loads.size(); ++l)
    p.loads[l].strides = strides[l];
}

} // namespace

bool hasRenderRule(OpKind op) {
  switch (op) {
  case OpKind::Neg:
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
  case OpKind::Scale:
  case OpKind::Cast:
  case OpKind::GeluGrad:
  case OpKind::SiluGrad:
  case OpKind::ReluGrad:
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Maximum:
  case OpKind::Minimum:
  case OpKind::Dropout:
  case OpKind::DropoutGrad:
    return true;
  default:
    return false;
  }
}

bool isFloat16(DType t) { return t == DType::BF16 || t == DType::F16; }

DType computeType(DType t) { return isFloat16(t) ? DType::F32 : t; }

const char *cTypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "float";
  case DType::F64:
    return "double";
  case DType::I32:
    return "int32_t";
  case DType::I64:
    return "int64_t";
  default:
    return nullptr;
  }
}

namespace {

// The row op of `body` (index into its nodes), -1 if none, or an error if
// several.
llvm::Expected<int32_t> findRowOp(const Graph &body) {
  int32_t row = -1;
  for (size_t n = 0; n < body.nodes().size(); ++n) {
    if (!rowOpOperands(body.node(n).op))
      continue;
    if (row >= 0)
      return err(body, "has two row ops (%" +
                           body.value(body.node(row).results[0]).name + ", %" +
                           body.value(body.node(n).results[0]).name +
                           "); a kernel takes one");
    row = int32_t(n);
  }
  return row;
}

// Checks the row op and marks the prologue (its ancestors) and the scratch
// rows.
llvm::Error planRow(KernelPlan &p) {
  const Graph &body = *p.body;
  const Node &op = body.node(p.row);
  const std::string name = "%" + body.value(op.results[0]).name;
  if (p.anchor >= 0)
    return err(body,
               "a matmul anchor and row op " + name + " cannot share a kernel");
  const TensorType &t = body.type(op.results[0]);
  if (t.rank() < 2 || t.shape.back() > kMaxFusedRow)
    return err(body, "row op " + name + " is " + t.str() +
                         ": a fused row op needs rank >= 2 and rows of at "
                         "most " +
                         std::to_string(kMaxFusedRow) + " elements");
  for (ValueId v : op.operands)
    if (!isFloatType(body.type(v).dtype))
      return err(body, "row op " + name + " reads %" + body.value(v).name +
                           ", which is not f32, f64, bf16 or f16");
  for (size_t k = rowOpOperands(op.op); k < op.operands.size(); ++k)
    if (!body.value(op.operands[k]).isInput())
      return err(body, "row op " + name + " must read its weight / bias %" +
                           body.value(op.operands[k]).name +
                           " from a body input");
  // Ancestors of the row op: a walk back from it (nodes are topological).
  p.inPrologue.assign(body.nodes().size(), false);
  llvm::SmallVector<bool, 16> needed(body.numValues(), false);
  for (ValueId v : op.operands)
    needed[v] = true;
  for (int32_t n = p.row - 1; n >= 0; --n) {
    const Node &node = body.node(n);
    if (!llvm::any_of(node.results, [&](ValueId r) { return needed[r]; }))
      continue;
    p.inPrologue[n] = true;
    for (ValueId v : node.operands)
      needed[v] = true;
  }
  // Scratch: result 0, and prologue values read outside the prologue pass
  // (column sums of prologue values accumulate in that pass).
  p.scratch.push_back(op.results[0]);
  for (size_t n = 0; n < body.nodes().size(); ++n) {
    const Node &node = body.node(n);
    if (p.inPrologue[n] || node.op == OpKind::ReduceSum)
      continue;
    for (ValueId v : node.operands) {
      int32_t d = body.value(v).defNode;
      if (d >= 0 && p.inPrologue[d] && !p.inScratch(v))
        p.scratch.push_back(v);
    }
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<KernelPlan> planKernel(const Graph &body) {
  KernelPlan p;
  p.name = body.name;
  p.body = &body;
  auto nodes = body.nodes();
  if (!nodes.empty() && nodes[0].op == OpKind::MatMul) {
    p.anchor = 0;
    if (!isFloatType(body.type(nodes[0].results[0]).dtype))
      return err(body, "the matmul anchor must have a float result (f32, "
                       "f64, bf16 or f16)");
    for (ValueId v : nodes[0].operands)
      if (!body.value(v).isInput())
        return err(body, "the matmul anchor must read body inputs only");
  }
  auto row = findRowOp(body);
  if (!row)
    return row.takeError();
  p.row = *row;
  size_t first = p.anchor >= 0 ? 1 : 0;
  auto elementwise = llvm::find_if(nodes.drop_front(first), [&](const Node &n) {
    return n.op != OpKind::ReduceSum;
  });
  if (elementwise == nodes.end())
    return err(body, "has no elementwise op");
  p.domain = p.isRowKernel() ? body.type(nodes[p.row].results[0]).shape
                             : body.type(elementwise->results[0]).shape;
  if (p.isRowKernel())
    if (auto e = planRow(p))
      return e;
  llvm::SmallVector<bool, 8> isSum(body.numValues(), false);
  if (p.anchor >= 0) {
    ValueId a = nodes[0].results[0];
    if (body.type(a).shape != p.domain)
      return err(body, "the anchor result " + body.type(a).str() +
                           " differs from the loop's shape");
    p.loads.push_back({a, -1, broadcastStrides(p.domain, p.domain)});
  }
  llvm::SmallVector<int32_t, 8> inputIndex(body.numValues(), -1);
  for (size_t i = 0; i < body.inputs().size(); ++i)
    inputIndex[body.inputs()[i]] = int32_t(i);
  auto load = [&](ValueId v) {
    if (!body.value(v).isInput() ||
        llvm::any_of(p.loads,
                     [&](const KernelLoad &l) { return l.value == v; }))
      return;
    p.loads.push_back(
        {v, inputIndex[v], broadcastStrides(body.type(v).shape, p.domain)});
  };
  for (size_t n = first; n < nodes.size(); ++n) {
    const Node &node = nodes[n];
    const Value &r = body.value(node.results[0]);
    for (ValueId v : node.operands)
      if (isSum[v])
        return err(body, "%" + r.name + " reads the column sum %" +
                             body.value(v).name +
                             " (a sum is complete only after the loop)");
    if (int32_t(n) == p.row) {
      for (ValueId v : node.operands)
        load(v);
      for (size_t k = 1; k < node.results.size(); ++k)
        isSum[node.results[k]] = true;
      continue;
    }
    if (node.op == OpKind::ReduceSum) {
      ValueId x = node.operands[0];
      if (!isColumnSum(body, node) || body.type(x).shape != p.domain)
        return err(body, "%" + r.name +
                             " is not a column sum of the loop (reduce_sum "
                             "over every dim but the last of a value of the "
                             "loop's shape)");
      isSum[node.results[0]] = true;
      load(x);
      continue;
    }
    if (!hasRenderRule(node.op))
      return err(body, "no rendering rule for " + opName(node.op) + " (%" +
                           r.name + ")");
    if (r.type.shape != p.domain)
      return err(body, "%" + r.name + " is " + r.type.str() +
                           ", not the loop's shape");
    if (!isFloatType(r.type.dtype))
      return err(body, "%" + r.name + " must be f32, f64, bf16 or f16");
    if (node.op == OpKind::Scale &&
        !std::isfinite(node.attrs.getFloat("value", 1)))
      return err(body, "%" + r.name + ": scale value must be finite");
    p.usesRng |= node.op == OpKind::Dropout || node.op == OpKind::DropoutGrad;
    for (ValueId v : node.operands) {
      const Value &val = body.value(v);
      if (!cTypeName(computeType(val.type.dtype)))
        return err(body,
                   "%" + val.name + " has unsupported type " + val.type.str());
      load(v);
    }
  }
  for (size_t k = 0; k < body.outputs().size(); ++k) {
    ValueId v = body.outputs()[k];
    if (body.value(v).isInput())
      return err(body, "returns its input %" + body.value(v).name);
    p.stores.push_back(v);
    int32_t def = body.value(v).defNode;
    if (isSum[v] && def == p.row)
      p.sums.push_back({v, int32_t(k), /*byRowOp=*/true});
    else if (isSum[v])
      p.sums.push_back({body.node(def).operands[0], int32_t(k)});
    if (p.anchor >= 0 && p.anchorResult < 0 && v == nodes[0].results[0])
      p.anchorResult = int32_t(k);
  }
  if (p.anchor >= 0 && p.anchorResult < 0) {
    const TensorType &t = body.type(nodes[0].results[0]);
    for (size_t k = 0; k < p.stores.size() && p.anchorResult < 0; ++k)
      if (body.type(p.stores[k]) == t)
        p.anchorResult = int32_t(k);
    if (p.anchorResult < 0)
      return err(body, "no result of the anchor's type " + t.str() +
                           " to hold the anchor's result");
  }
  coalesce(p);
  return p;
}

} // namespace strata::codegen
