//===- Fusion.cpp - The fusion pass: elementwise chains into kernels ------===//
#include "passes/fusion/Fusion.h"

#include "passes/PassManager.h"
#include "passes/autodiff/Autodiff.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <queue>

namespace strata {

namespace {

// The longest common dotted prefix of the members' scopes ("layers.0.mlp"
// for layers.0.mlp.fc1 and layers.0.mlp.act); the last member's scope when
// they share none.
std::string commonScope(const Graph &g, llvm::ArrayRef<int32_t> members) {
  llvm::StringRef common = g.node(members.front()).scope;
  for (int32_t m : members) {
    llvm::StringRef s = g.node(m).scope;
    while (!common.empty() && s != common &&
           !(s.startswith(common) && s[common.size()] == '.')) {
      size_t dot = common.rfind('.');
      common = dot == llvm::StringRef::npos ? "" : common.take_front(dot);
    }
  }
  return common.empty() ? g.node(members.back()).scope : common.str();
}

// A unit of the re-sorted graph: one node, or one group (placed at its last
// member).
struct Unit {
  llvm::SmallVector<int32_t, 8> nodes;
  const FusionGroup *group = nullptr;
  int32_t key() const { return nodes.back(); }
};

class FusedGraphBuilder {
public:
  FusedGraphBuilder(const Graph &g, const std::vector<FusionGroup> &groups)
      : g_(g), groups_(groups), users_(g.users()),
        map_(g.numValues(), kNoValue), isOutput_(g.numValues(), false) {
    for (ValueId v : g.outputs())
      isOutput_[v] = true;
    for (const Node &n : g.nodes())
      if (n.op == OpKind::Fused)
        usedKernels_.insert(n.attrs.getString("kernel"));
  }
  Graph build();

private:
  std::vector<Unit> units(std::vector<int32_t> &unitOf) const;
  void copyNode(const Node &n);
  void emitGroup(const FusionGroup &group);
  std::string freshKernelName();

  const Graph &g_;
  const std::vector<FusionGroup> &groups_;
  std::vector<llvm::SmallVector<int32_t, 2>> users_;
  std::vector<ValueId> map_; // old value -> value of out_
  std::vector<bool> isOutput_;
  llvm::StringSet<> usedKernels_;
  int64_t nextKernel_ = 0;
  Graph out_;
};

std::vector<Unit> FusedGraphBuilder::units(std::vector<int32_t> &unitOf) const {
  std::vector<Unit> us;
  unitOf.assign(g_.nodes().size(), -1);
  for (const FusionGroup &grp : groups_) {
    Unit u;
    u.nodes = grp.members;
    u.group = &grp;
    for (int32_t m : grp.members)
      unitOf[m] = int32_t(us.size());
    us.push_back(std::move(u));
  }
  for (int32_t n = 0; n < int32_t(g_.nodes().size()); ++n) {
    if (unitOf[n] >= 0)
      continue;
    unitOf[n] = int32_t(us.size());
    us.push_back(Unit{{n}, nullptr});
  }
  return us;
}

Graph FusedGraphBuilder::build() {
  out_.name = g_.name;
  out_.mesh = g_.mesh;
  out_.partitioned = g_.partitioned;
  for (ValueId v : g_.inputs()) {
    const Value &val = g_.value(v);
    map_[v] = out_.addInput(val.name, val.type, val.attrs);
    out_.value(map_[v]).sharding = val.sharding;
  }
  // Kahn's algorithm over units, smallest key first among the ready ones.
  std::vector<int32_t> unitOf;
  std::vector<Unit> us = units(unitOf);
  std::vector<llvm::SmallVector<int32_t, 4>> succ(us.size());
  std::vector<int32_t> pending(us.size(), 0);
  for (int32_t u = 0; u < int32_t(us.size()); ++u) {
    llvm::SmallVector<int32_t, 4> preds;
    for (int32_t n : us[u].nodes)
      for (ValueId v : g_.node(n).operands) {
        int32_t p = g_.value(v).defNode;
        if (p >= 0 && unitOf[p] != u && !llvm::is_contained(preds, unitOf[p]))
          preds.push_back(unitOf[p]);
      }
    for (int32_t p : preds)
      succ[p].push_back(u);
    pending[u] = int32_t(preds.size());
  }
  auto later = [&](int32_t a, int32_t b) { return us[a].key() > us[b].key(); };
  std::priority_queue<int32_t, std::vector<int32_t>, decltype(later)> ready(
      later);
  for (int32_t u = 0; u < int32_t(us.size()); ++u)
    if (!pending[u])
      ready.push(u);
  while (!ready.empty()) {
    int32_t u = ready.top();
    ready.pop();
    if (us[u].group)
      emitGroup(*us[u].group);
    else
      copyNode(g_.node(us[u].nodes.front()));
    for (int32_t s : succ[u])
      if (--pending[s] == 0)
        ready.push(s);
  }
  for (ValueId v : g_.outputs())
    out_.addOutput(map_[v]);
  return std::move(out_);
}

void FusedGraphBuilder::copyNode(const Node &n) {
  llvm::SmallVector<ValueId, 4> operands;
  for (ValueId v : n.operands)
    operands.push_back(map_[v]);
  llvm::SmallVector<TensorType, 1> types;
  llvm::SmallVector<std::string, 1> names;
  for (ValueId r : n.results) {
    types.push_back(g_.type(r));
    names.push_back(g_.value(r).name);
  }
  int32_t m = out_.addNode(n.op, operands, types, n.attrs, n.scope, names);
  out_.node(m).body = n.body;
  for (size_t k = 0; k < n.results.size(); ++k) {
    map_[n.results[k]] = out_.node(m).results[k];
    out_.value(map_[n.results[k]]).sharding = g_.value(n.results[k]).sharding;
  }
}

std::string FusedGraphBuilder::freshKernelName() {
  while (true) {
    std::string name = "fused" + std::to_string(nextKernel_++);
    if (usedKernels_.insert(name).second)
      return name;
  }
}

void FusedGraphBuilder::emitGroup(const FusionGroup &group) {
  // Body order: the anchor first (it reads only values from outside), then
  // the members in graph order.
  llvm::SmallVector<int32_t, 8> order;
  if (group.anchor >= 0)
    order.push_back(group.anchor);
  for (int32_t m : group.members)
    if (m != group.anchor)
      order.push_back(m);
  auto isMember = [&](int32_t n) { // members are sorted
    return std::binary_search(group.members.begin(), group.members.end(), n);
  };

  llvm::SmallVector<ValueId, 8> inputs, outputs;
  llvm::DenseSet<ValueId> isInput;
  for (int32_t m : order)
    for (ValueId v : g_.node(m).operands)
      if (!isMember(g_.value(v).defNode) && isInput.insert(v).second)
        inputs.push_back(v);
  for (int32_t m : order)
    for (ValueId r : g_.node(m).results)
      if (isOutput_[r] || !llvm::all_of(users_[r], isMember))
        outputs.push_back(r);
  // A group nothing reads is dead code: a fused node needs a result, and
  // removing code is dce's job, so its nodes stay as they are.
  if (outputs.empty()) {
    for (int32_t m : order)
      copyNode(g_.node(m));
    return;
  }

  std::string kernel = freshKernelName();
  auto body = std::make_shared<Graph>();
  body->name = kernel;
  llvm::DenseMap<ValueId, ValueId> inBody;
  for (ValueId v : inputs)
    inBody[v] = body->addInput(g_.value(v).name, g_.type(v));
  for (int32_t m : order) {
    const Node &n = g_.node(m);
    llvm::SmallVector<ValueId, 4> operands;
    for (ValueId v : n.operands)
      operands.push_back(inBody[v]);
    llvm::SmallVector<TensorType, 1> types;
    llvm::SmallVector<std::string, 1> names;
    for (ValueId r : n.results) {
      types.push_back(g_.type(r));
      names.push_back(g_.value(r).name);
    }
    int32_t b = body->addNode(n.op, operands, types, n.attrs, n.scope, names);
    for (size_t k = 0; k < n.results.size(); ++k)
      inBody[n.results[k]] = body->node(b).results[k];
  }
  llvm::SmallVector<ValueId, 8> bodyOutputs;
  for (ValueId r : outputs)
    bodyOutputs.push_back(inBody[r]);
  body->setOutputs(bodyOutputs);

  Attrs attrs{{"kernel", kernel}};
  if (isBackward(g_.node(group.members.front())))
    attrs.set(kBackwardAttr, true);
  llvm::SmallVector<ValueId, 8> operands;
  for (ValueId v : inputs)
    operands.push_back(map_[v]);
  llvm::SmallVector<TensorType, 4> types;
  llvm::SmallVector<std::string, 4> names;
  for (ValueId r : outputs) {
    types.push_back(g_.type(r));
    names.push_back(g_.value(r).name);
  }
  int32_t n = out_.addNode(OpKind::Fused, operands, types, std::move(attrs),
                           commonScope(g_, group.members), names);
  out_.node(n).body = std::move(body);
  for (size_t k = 0; k < outputs.size(); ++k) {
    map_[outputs[k]] = out_.node(n).results[k];
    out_.value(map_[outputs[k]]).sharding = g_.value(outputs[k]).sharding;
  }
}

class FusionPass : public Pass {
public:
  explicit FusionPass(const FusionOptions &options) : options_(options) {}
  llvm::StringRef name() const override { return "fusion"; }
  llvm::Expected<bool> run(Graph &g) override { return fuseGraph(g, options_); }

private:
  FusionOptions options_;
};

} // namespace

bool fuseGraph(Graph &g, const FusionOptions &options) {
  std::vector<FusionGroup> groups = findFusionGroups(g, options);
  if (groups.empty())
    return false;
  g = FusedGraphBuilder(g, groups).build();
  return true;
}

std::unique_ptr<Pass> createFusionPass(const FusionOptions &options) {
  return std::make_unique<FusionPass>(options);
}

void registerFusionPass() {
  registerPass(
      {"fusion",
       "group elementwise chains, matmul epilogues and row-op (softmax, "
       "norm) prologues/epilogues into fused kernels; {epilogues=false} "
       "keeps matmuls out, {rows=false} row ops, {max_inputs=N} caps the "
       "values a kernel reads (default 1024)",
       [](const PassOptions &options) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("fusion", options,
                                       {"epilogues", "rows", "max_inputs"}))
           return e;
         FusionOptions o;
         if (auto it = options.find("max_inputs"); it != options.end())
           if (!llvm::to_integer(it->second, o.maxInputs) || o.maxInputs < 1)
             return llvm::createStringError(
                 llvm::inconvertibleErrorCode(),
                 "fusion: max_inputs must be a positive integer, got '" +
                     it->second + "'");
         for (auto [key, flag] : {std::pair{"epilogues", &o.matmulEpilogues},
                                  std::pair{"rows", &o.rowOps}}) {
           auto it = options.find(key);
           if (it == options.end())
             continue;
           if (it->second != "true" && it->second != "false")
             return llvm::createStringError(
                 llvm::inconvertibleErrorCode(),
                 "fusion: " + std::string(key) +
                     " must be true or false, got '" + it->second + "'");
           *flag = it->second == "true";
         }
         return createFusionPass(o);
       }});
}

} // namespace strata
