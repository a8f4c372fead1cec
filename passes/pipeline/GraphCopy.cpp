//===- GraphCopy.cpp - Builds a graph from pieces of another
//---------------===//
#include "passes/pipeline/GraphCopy.h"

#include "llvm/Support/ErrorHandling.h"

namespace strata {

ValueId GraphCopier::addInput(ValueId v, llvm::StringRef name) {
  const Value &sv = src_.value(v);
  ValueId d = dst_.addInput(name.empty() ? llvm::StringRef(sv.name) : name,
                            sv.type, sv.isInput() ? sv.attrs : Attrs{});
  dst_.value(d).sharding = sv.sharding;
  map_[v] = d;
  return d;
}

int32_t GraphCopier::copyNode(const Node &n, llvm::ArrayRef<ValueId> operands,
                              llvm::ArrayRef<std::string> names,
                              const Attrs &attrs) {
  llvm::SmallVector<TensorType, 1> types;
  llvm::SmallVector<std::string, 1> resultNames;
  for (size_t i = 0; i < n.results.size(); ++i) {
    types.push_back(src_.type(n.results[i]));
    resultNames.push_back(i < names.size() ? names[i]
                                           : src_.value(n.results[i]).name);
  }
  int32_t m = dst_.addNode(n.op, operands, types, attrs, n.scope, resultNames);
  dst_.node(m).body = n.body;
  for (size_t i = 0; i < n.results.size(); ++i)
    dst_.value(dst_.node(m).results[i]).sharding =
        src_.value(n.results[i]).sharding;
  return m;
}

int32_t GraphCopier::copyNode(int32_t n) {
  const Node &node = src_.node(n);
  llvm::SmallVector<ValueId, 4> operands;
  for (ValueId v : node.operands) {
    if (map_[v] == kNoValue)
      llvm::report_fatal_error("GraphCopier: operand %" +
                               llvm::Twine(src_.value(v).name) +
                               " of a copied node is not mapped");
    operands.push_back(map_[v]);
  }
  int32_t m = copyNode(node, operands, {}, node.attrs);
  for (size_t i = 0; i < node.results.size(); ++i)
    map_[node.results[i]] = dst_.node(m).results[i];
  return m;
}

Graph emptyLike(const Graph &src) {
  Graph g;
  g.name = src.name;
  g.mesh = src.mesh;
  g.partitioned = src.partitioned;
  return g;
}

} // namespace strata
