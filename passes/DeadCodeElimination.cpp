//===- DeadCodeElimination.cpp - Removes nodes that reach no output
//--------===//
//
// `dce`: a node stays if one of its results reaches a graph output, or if it
// talks to another stage: `send` and `recv` stay even when unused, because
// the peer's matching recv/send would otherwise wait forever. Collectives are
// pure values here: every rank runs the same program, so all ranks drop a
// dead collective together. Graph inputs always stay (they are the graph's
// signature). Names, scopes and shardings are kept.
//
//===----------------------------------------------------------------------===//
#include "passes/PassManager.h"

namespace strata {

namespace {

bool isCommunication(OpKind k) {
  return k == OpKind::Send || k == OpKind::Recv;
}

class DeadCodeElimination : public Pass {
public:
  llvm::StringRef name() const override { return "dce"; }

  llvm::Expected<bool> run(Graph &g) override {
    std::vector<bool> liveValue(g.numValues(), false);
    for (ValueId v : g.outputs())
      liveValue[v] = true;
    std::vector<bool> liveNode(g.nodes().size(), false);
    for (size_t i = g.nodes().size(); i-- > 0;) {
      const Node &n = g.node(i);
      liveNode[i] =
          isCommunication(n.op) ||
          llvm::any_of(n.results, [&](ValueId r) { return liveValue[r]; });
      if (liveNode[i])
        for (ValueId v : n.operands)
          liveValue[v] = true;
    }
    if (llvm::all_of(liveNode, [](bool b) { return b; }))
      return false;
    g = rebuild(g, liveNode);
    return true;
  }

private:
  // A copy of `g` holding only the nodes marked live.
  static Graph rebuild(const Graph &g, const std::vector<bool> &liveNode) {
    Graph out;
    out.name = g.name;
    out.mesh = g.mesh;
    std::vector<ValueId> map(g.numValues(), kNoValue);
    for (ValueId v : g.inputs()) {
      const Value &val = g.value(v);
      map[v] = out.addInput(val.name, val.type, val.attrs);
      out.value(map[v]).sharding = val.sharding;
    }
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (!liveNode[i])
        continue;
      const Node &n = g.node(i);
      llvm::SmallVector<ValueId, 4> operands;
      for (ValueId v : n.operands)
        operands.push_back(map[v]);
      llvm::SmallVector<TensorType, 1> types;
      llvm::SmallVector<std::string, 1> names;
      for (ValueId r : n.results) {
        types.push_back(g.type(r));
        names.push_back(g.value(r).name);
      }
      int32_t m = out.addNode(n.op, operands, types, n.attrs, n.scope, names);
      out.node(m).body = n.body;
      for (size_t k = 0; k < n.results.size(); ++k) {
        map[n.results[k]] = out.node(m).results[k];
        out.value(map[n.results[k]]).sharding = g.value(n.results[k]).sharding;
      }
    }
    for (ValueId v : g.outputs())
      out.addOutput(map[v]);
    return out;
  }
};

} // namespace

void registerDeadCodeEliminationPass() {
  registerPass(
      {"dce", "Removes nodes whose results reach no graph output",
       [](const PassOptions &options) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("dce", options, {}))
           return e;
         return std::make_unique<DeadCodeElimination>();
       }});
}

} // namespace strata
