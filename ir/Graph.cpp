//===- Graph.cpp - SSA dataflow graph
//--------------------------------------===//
#include "ir/Graph.h"

#include "llvm/Support/ErrorHandling.h"

namespace strata {

ValueId Graph::addInput(llvm::StringRef name, TensorType type, Attrs attrs) {
  ValueId id = static_cast<ValueId>(values_.size());
  if (!byName_.try_emplace(name, id).second)
    llvm::report_fatal_error(llvm::Twine("duplicate value name %") + name);
  Value v;
  v.name = name.str();
  v.type = std::move(type);
  v.attrs = std::move(attrs);
  values_.push_back(std::move(v));
  inputs_.push_back(id);
  return id;
}

int32_t Graph::addNode(OpKind op, llvm::ArrayRef<ValueId> operands,
                       llvm::ArrayRef<TensorType> resultTypes, Attrs attrs,
                       llvm::StringRef scope,
                       llvm::ArrayRef<std::string> names) {
  int32_t n = static_cast<int32_t>(nodes_.size());
  Node node;
  node.op = op;
  node.operands.assign(operands.begin(), operands.end());
  node.attrs = std::move(attrs);
  node.scope = scope.str();
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    std::string name = (i < names.size() && !names[i].empty())
                           ? names[i]
                           : freshName(opName(op));
    ValueId id = static_cast<ValueId>(values_.size());
    if (!byName_.try_emplace(name, id).second)
      llvm::report_fatal_error(llvm::Twine("duplicate value name %") + name);
    Value v;
    v.name = std::move(name);
    v.type = resultTypes[i];
    v.defNode = n;
    v.resultIndex = static_cast<int32_t>(i);
    values_.push_back(std::move(v));
    node.results.push_back(id);
  }
  nodes_.push_back(std::move(node));
  return n;
}

ValueId Graph::lookup(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? kNoValue : it->second;
}

std::string Graph::freshName(llvm::StringRef hint) {
  // Names ending in a digit get a '_' so "x" + 1 never collides with "x1".
  std::string base = hint.empty() ? "v" : hint.str();
  if (lookup(base) == kNoValue && !std::isdigit(base.back()))
    return base;
  if (std::isdigit(base.back()))
    base += '_';
  while (true) {
    std::string cand = base + std::to_string(nextFresh_++);
    if (lookup(cand) == kNoValue)
      return cand;
  }
}

void Graph::rename(ValueId v, llvm::StringRef newName) {
  if (values_[v].name == newName)
    return;
  if (!byName_.try_emplace(newName, v).second)
    llvm::report_fatal_error(llvm::Twine("rename to existing name %") +
                             newName);
  byName_.erase(values_[v].name);
  values_[v].name = newName.str();
}

llvm::SmallVector<ValueId> Graph::params() const {
  llvm::SmallVector<ValueId> ps;
  for (ValueId v : inputs_)
    if (values_[v].isParam())
      ps.push_back(v);
  return ps;
}

std::vector<llvm::SmallVector<int32_t, 2>> Graph::users() const {
  std::vector<llvm::SmallVector<int32_t, 2>> u(values_.size());
  for (size_t n = 0; n < nodes_.size(); ++n)
    for (ValueId v : nodes_[n].operands)
      if (u[v].empty() || u[v].back() != static_cast<int32_t>(n))
        u[v].push_back(static_cast<int32_t>(n));
  return u;
}

bool isColumnSum(const Graph &g, const Node &n) {
  if (n.op != OpKind::ReduceSum || n.operands.size() != 1)
    return false;
  const TensorType &x = g.type(n.operands[0]);
  bool isFloat = x.dtype == DType::F32 || x.dtype == DType::F64 ||
                 x.dtype == DType::BF16 || x.dtype == DType::F16;
  if (!isFloat || x.rank() < 2)
    return false;
  IntList axes = n.attrs.getInts("axes");
  if (int64_t(axes.size()) != x.rank() - 1)
    return false;
  for (size_t d = 0; d < axes.size(); ++d)
    if (axes[d] != int64_t(d))
      return false;
  const TensorType &y = g.type(n.results[0]);
  return y.dtype == x.dtype && y.shape == Shape{x.shape.back()};
}

} // namespace strata
