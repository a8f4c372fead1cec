//===- Pipeline.cpp - Cutting a microbatch graph into pipeline stages
//------===//
#include "passes/pipeline/Pipeline.h"

#include "passes/autodiff/Autodiff.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/GraphCopy.h"
#include "passes/pipeline/ModelUnits.h"
#include "passes/pipeline/PipelineCut.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>
#include <map>
#include <set>

namespace strata {

using namespace pipeline;

namespace {

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "pipeline: " + msg);
}

std::string describe(const Graph &g, int32_t n) {
  const Node &node = g.node(n);
  std::string s = node.results.empty() ? opName(node.op).str()
                                       : "%" + g.value(node.results[0]).name +
                                             " = " + opName(node.op).str();
  return s + " (" + (node.scope.empty() ? "no scope" : node.scope) + ")";
}

/// A tied parameter's gradient as a sum over stages: the bwd `add` tree
/// under its output (`grad.<p>`), possibly under linear collectives
/// (`wrappers`, outermost first).
struct TiedGradient {
  ValueId param = kNoValue;
  ValueId output = kNoValue;
  std::vector<int32_t> wrappers;
  std::vector<int32_t> tree;   // add nodes
  std::vector<ValueId> leaves; // in graph order of their use
};

class Cutter {
public:
  Cutter(const Graph &g, const PipelineOptions &o) : g_(g), o_(o) {}
  llvm::Expected<PipelinePlan> run();

private:
  int64_t rankOf(int64_t stage) const { return stage % o_.pp; }
  llvm::Error assignNodes(const StageCut &cut);
  llvm::Error findTiedGradients();
  llvm::Error collectBoundaries();
  llvm::Expected<Graph> forwardProgram(int64_t s);
  llvm::Expected<Graph> backwardProgram(int64_t s);
  void addRecv(Graph &dst, GraphCopier &c, ValueId v, int64_t peer, int64_t tag,
               const llvm::Twine &reason);

  const Graph &g_;
  const PipelineOptions &o_;
  int64_t S_ = 1;
  std::optional<Mesh> mesh_;
  std::vector<int64_t> stageOf_; // per node; -1: part of a tied gradient
  std::vector<TiedGradient> tied_;
  // Per stage: values received from the previous (F) / next (B) stage and
  // sent to the next (F) / previous (B) one, and the stash.
  std::vector<std::set<ValueId>> recvF_, sendF_, recvB_, sendB_, stash_;
  // Per stage: graph inputs read by F / B, and parameters held.
  std::vector<std::vector<bool>> inputF_, inputB_, holds_;
  // Message tags: forward (boundary k -> k+1) and backward (k -> k-1).
  std::map<std::pair<int64_t, ValueId>, int64_t> tagF_, tagB_;
  int64_t nextTag_ = 0;
};

llvm::Error Cutter::assignNodes(const StageCut &cut) {
  std::vector<int64_t> layerStage;
  for (int64_t s = 0; s < S_; ++s)
    for (int64_t l = 0; l < cut.numLayers[s]; ++l)
      layerStage.push_back(s);
  stageOf_.assign(g_.nodes().size(), 0);
  for (size_t i = 0; i < g_.nodes().size(); ++i) {
    ModelUnit u = unitOfScope(g_.node(i).scope);
    switch (u.kind) {
    case ModelUnit::Pre:
      stageOf_[i] = 0;
      break;
    case ModelUnit::Post:
      stageOf_[i] = S_ - 1;
      break;
    case ModelUnit::Layer:
      stageOf_[i] = layerStage[u.layer];
      break;
    case ModelUnit::Unknown:
      return err(describe(g_, int32_t(i)) +
                 ": the pipeline places nodes by scope, and this one is none "
                 "of embed, layers.<i>, ln_f, lm_head, loss (their "
                 "sub-scopes included)");
    }
  }
  return llvm::Error::success();
}

llvm::Error Cutter::findTiedGradients() {
  auto users = g_.users();
  for (ValueId p : g_.params()) {
    std::set<int64_t> stages;
    for (int32_t u : users[p])
      stages.insert(stageOf_[u]);
    if (stages.size() < 2)
      continue;
    TiedGradient t;
    t.param = p;
    t.output = g_.lookup("grad." + g_.value(p).name);
    if (t.output == kNoValue || !llvm::is_contained(g_.outputs(), t.output))
      return err("parameter %" + g_.value(p).name + " is read on stages " +
                 llvm::Twine(*stages.begin()) + " and " +
                 llvm::Twine(*stages.rbegin()) +
                 " but the graph has no output %grad." + g_.value(p).name +
                 " (run autodiff first)");
    ValueId v = t.output;
    auto def = [&](ValueId x) -> const Node * {
      int32_t d = g_.value(x).defNode;
      return d >= 0 && isBackward(g_.node(d)) ? &g_.node(d) : nullptr;
    };
    while (const Node *n = def(v)) {
      if (n->op != OpKind::AllReduce && n->op != OpKind::AllGather &&
          n->op != OpKind::ReduceScatter)
        break;
      t.wrappers.push_back(g_.value(v).defNode);
      v = n->operands[0];
    }
    std::function<void(ValueId, bool)> walk = [&](ValueId x, bool root) {
      const Node *n = def(x);
      if (n && n->op == OpKind::Add && (root || users[x].size() == 1)) {
        t.tree.push_back(g_.value(x).defNode);
        walk(n->operands[0], false);
        walk(n->operands[1], false);
      } else {
        t.leaves.push_back(x);
      }
    };
    walk(v, true);
    for (int32_t n : t.wrappers)
      stageOf_[n] = -1;
    for (int32_t n : t.tree)
      stageOf_[n] = -1;
    tied_.push_back(std::move(t));
  }
  return llvm::Error::success();
}

llvm::Error Cutter::collectBoundaries() {
  size_t nv = g_.numValues();
  for (auto *v : {&recvF_, &sendF_, &recvB_, &sendB_, &stash_})
    v->resize(S_);
  for (auto *v : {&inputF_, &inputB_, &holds_})
    v->assign(S_, std::vector<bool>(nv, false));
  auto valueStage = [&](ValueId v) { return stageOf_[g_.value(v).defNode]; };
  for (size_t i = 0; i < g_.nodes().size(); ++i) {
    const Node &n = g_.node(i);
    int64_t s = stageOf_[i];
    if (s < 0)
      continue;
    bool backward = isBackward(n);
    for (ValueId v : n.operands) {
      const Value &val = g_.value(v);
      if (val.isInput()) {
        (backward ? inputB_ : inputF_)[s][v] = true;
        if (val.isParam())
          holds_[s][v] = true;
        continue;
      }
      int64_t d = valueStage(v);
      bool fromForward = !isBackward(g_.node(val.defNode));
      if (d < 0)
        return err(describe(g_, int32_t(i)) + " reads %" + val.name +
                   ", part of a tied parameter's gradient sum");
      if (fromForward) {
        if (d > s)
          return err(describe(g_, int32_t(i)) + " on stage " + llvm::Twine(s) +
                     " reads %" + val.name + " from the later stage " +
                     llvm::Twine(d) + " (forward values flow to later stages)");
        for (int64_t k = d; k < s; ++k) {
          sendF_[k].insert(v);
          recvF_[k + 1].insert(v);
        }
        if (backward)
          stash_[s].insert(v);
      } else {
        if (d < s)
          return err(describe(g_, int32_t(i)) + " on stage " + llvm::Twine(s) +
                     " reads the gradient %" + val.name +
                     " from the earlier stage " + llvm::Twine(d) +
                     " (gradients flow to earlier stages)");
        for (int64_t k = d; k > s; --k) {
          sendB_[k].insert(v);
          recvB_[k - 1].insert(v);
        }
      }
    }
  }
  for (int64_t k = 0; k < S_; ++k)
    for (ValueId v : sendF_[k])
      tagF_[{k, v}] = nextTag_++;
  for (int64_t k = S_ - 1; k >= 0; --k)
    for (ValueId v : sendB_[k])
      tagB_[{k, v}] = nextTag_++;
  return llvm::Error::success();
}

void Cutter::addRecv(Graph &dst, GraphCopier &c, ValueId v, int64_t peer,
                     int64_t tag, const llvm::Twine &reason) {
  const Value &val = g_.value(v);
  int32_t n = dst.addNode(
      OpKind::Recv, {}, {val.type},
      recvAttrs(peer, tag, val.type, g_.node(val.defNode).scope, reason),
      g_.node(val.defNode).scope, {val.name});
  ValueId r = dst.node(n).results[0];
  dst.value(r).sharding = val.sharding;
  c.setMapped(v, r);
}

llvm::Expected<Graph> Cutter::forwardProgram(int64_t s) {
  Graph f = emptyLike(g_);
  f.name = g_.name + "_stage" + std::to_string(s) + "_forward";
  f.mesh = mesh_;
  GraphCopier c(g_, f);
  for (ValueId v : g_.inputs())
    if (inputF_[s][v])
      c.addInput(v);
  for (ValueId v : recvF_[s])
    addRecv(f, c, v, rankOf(s - 1), tagF_[{s - 1, v}],
            "pipeline: forward input from stage " + llvm::Twine(s - 1));
  for (size_t i = 0; i < g_.nodes().size(); ++i)
    if (stageOf_[i] == s && !isBackward(g_.node(i)))
      c.copyNode(int32_t(i));
  for (ValueId v : sendF_[s]) {
    llvm::StringRef scope = g_.node(g_.value(v).defNode).scope;
    f.addNode(OpKind::Send, {c.mapped(v)}, {},
              sendAttrs(rankOf(s + 1), tagF_[{s, v}], scope,
                        "pipeline: forward output needed by stage " +
                            llvm::Twine(s + 1)),
              scope);
  }
  if (s == S_ - 1)
    f.addOutput(c.mapped(g_.outputs()[0]));
  for (ValueId v : stash_[s])
    f.addOutput(c.mapped(v));
  return f;
}

/// Megatron-LM's gradient accumulation fusion: the microbatch's gradient
/// `g` (%grad.<p>) is added into the step's gradient buffer, which the
/// runtime binds both as the input %grad.<p>.acc and as the returned sum, so
/// no microbatch's gradient outlives its add in the workspace. The add keeps
/// g's scope and sharding (a partial sum over dp stays one).
static ValueId accumulateGradient(Graph &b, ValueId g) {
  std::string name = b.value(g).name;
  std::optional<Sharding> sharding = b.value(g).sharding;
  ValueId acc = b.addInput(name + ".acc", b.type(g));
  b.value(acc).sharding = sharding;
  b.rename(g, b.freshName(name + ".microbatch"));
  int32_t def = b.value(g).defNode;
  int32_t n = b.addNode(OpKind::Add, {acc, g}, {b.type(g)},
                        {{"bwd", true}, {"accumulate", true}},
                        def >= 0 ? b.node(def).scope : "", {name});
  ValueId sum = b.node(n).results[0];
  b.value(sum).sharding = sharding;
  return sum;
}

llvm::Expected<Graph> Cutter::backwardProgram(int64_t s) {
  Graph b = emptyLike(g_);
  b.name = g_.name + "_stage" + std::to_string(s) + "_backward";
  b.mesh = mesh_;
  GraphCopier c(g_, b);
  for (ValueId v : g_.inputs())
    if (inputB_[s][v])
      c.addInput(v);
  for (ValueId v : stash_[s])
    c.addInput(v);
  for (ValueId v : recvB_[s])
    addRecv(b, c, v, rankOf(s + 1), tagB_[{s + 1, v}],
            "pipeline: gradient from stage " + llvm::Twine(s + 1));
  // Each gradient is added into its buffer right where it is made, so it
  // dies there (a tied gradient, a sum over chunks, once that sum is made).
  llvm::DenseSet<ValueId> tiedOutputs;
  for (const TiedGradient &t : tied_)
    tiedOutputs.insert(t.output);
  llvm::DenseMap<ValueId, ValueId> accumulated;
  for (size_t i = 1; i < g_.outputs().size(); ++i)
    if (!tiedOutputs.count(g_.outputs()[i]))
      accumulated[g_.outputs()[i]] = kNoValue;
  for (size_t i = 0; i < g_.nodes().size(); ++i) {
    if (stageOf_[i] != s || !isBackward(g_.node(i)))
      continue;
    c.copyNode(int32_t(i));
    for (ValueId r : g_.node(i).results)
      if (auto it = accumulated.find(r); it != accumulated.end())
        it->second = accumulateGradient(b, c.mapped(r));
  }
  // This stage's part of each tied gradient: its leaves summed in order,
  // then the collectives the whole sum went through.
  for (const TiedGradient &t : tied_) {
    ValueId acc = kNoValue;
    for (ValueId leaf : t.leaves) {
      if (stageOf_[g_.value(leaf).defNode] != s)
        continue;
      if (acc == kNoValue) {
        acc = c.mapped(leaf);
        continue;
      }
      const Node &root = g_.node(t.tree[0]); // two leaves: a tree
      TensorType type = b.type(acc);
      int32_t n = b.addNode(OpKind::Add, {acc, c.mapped(leaf)}, {type},
                            root.attrs, root.scope,
                            {b.freshName(g_.value(t.output).name + ".part")});
      b.value(b.node(n).results[0]).sharding = g_.value(leaf).sharding;
      acc = b.node(n).results[0];
    }
    if (acc == kNoValue)
      continue;
    for (auto it = t.wrappers.rbegin(); it != t.wrappers.rend(); ++it) {
      const Node &w = g_.node(*it);
      int32_t n = c.copyNode(
          w, {acc}, {b.freshName(g_.value(w.results[0]).name + ".part")},
          w.attrs);
      acc = b.node(n).results[0];
    }
    b.rename(acc, g_.value(t.output).name);
    c.setMapped(t.output, acc);
  }
  for (ValueId v : sendB_[s]) {
    llvm::StringRef scope = g_.node(g_.value(v).defNode).scope;
    b.addNode(
        OpKind::Send, {c.mapped(v)}, {},
        sendAttrs(rankOf(s - 1), tagB_[{s, v}], scope,
                  "pipeline: gradient needed by stage " + llvm::Twine(s - 1)),
        scope);
  }
  for (size_t i = 1; i < g_.outputs().size(); ++i) {
    ValueId out = g_.outputs()[i];
    llvm::StringRef name = g_.value(out).name;
    ValueId p =
        name.startswith("grad.") ? g_.lookup(name.drop_front(5)) : kNoValue;
    if (p == kNoValue || !g_.value(p).isParam())
      return err("output %" + name +
                 " is not the gradient of a parameter "
                 "(the microbatch graph returns the loss, then grad.<p>)");
    if (!holds_[s][p])
      continue;
    if (c.mapped(out) == kNoValue)
      return err("stage " + llvm::Twine(s) + " reads %" + g_.value(p).name +
                 " but does not compute %" + name);
    auto it = accumulated.find(out);
    b.addOutput(it != accumulated.end() && it->second != kNoValue
                    ? it->second
                    : accumulateGradient(b, c.mapped(out)));
  }
  return b;
}

llvm::Expected<PipelinePlan> Cutter::run() {
  if (llvm::none_of(g_.nodes(), [](const Node &n) { return isBackward(n); }))
    return err("the graph has no backward nodes (the pipeline cuts the "
               "microbatch graph: run autodiff first)");
  if (g_.outputs().empty() || g_.type(g_.outputs()[0]).rank() != 0)
    return err("the microbatch graph's first output must be the scalar loss");
  auto schedule = buildSchedule(o_.schedule, o_.pp, o_.microbatches);
  if (!schedule)
    return err(toString(schedule.takeError()));
  int64_t P = o_.pp, V = o_.schedule.virtualStages;
  S_ = P * V;
  if (P > 1) {
    Mesh m;
    m.axes.push_back({"pp", P});
    if (g_.mesh)
      for (const MeshAxis &a : g_.mesh->axes) {
        if (a.name == "pp")
          return err("the graph's mesh already has a pp axis");
        m.axes.push_back(a);
      }
    mesh_ = m;
  } else {
    mesh_ = g_.mesh;
  }
  auto inFlight = maxInFlight(*schedule);
  std::vector<int64_t> stageInFlight(S_);
  for (int64_t j = 0; j < S_; ++j)
    stageInFlight[j] = inFlight[j % P][j / P];
  auto cut = cutStages(measureUnits(g_), stageInFlight, o_.layersPerStage, P);
  if (!cut)
    return cut.takeError();
  if (auto e = assignNodes(*cut))
    return e;
  if (auto e = findTiedGradients())
    return e;
  if (auto e = collectBoundaries())
    return e;

  PipelinePlan plan;
  plan.pp = P;
  plan.schedule = std::move(*schedule);
  plan.balanceReport = cut->report;
  for (int64_t s = 0; s < S_; ++s) {
    PipelineStage st;
    st.index = s;
    st.rank = rankOf(s);
    st.chunk = s / P;
    st.firstLayer = cut->firstLayer[s];
    st.numLayers = cut->numLayers[s];
    st.embedding = s == 0;
    st.head = s == S_ - 1;
    auto f = forwardProgram(s);
    if (!f)
      return f.takeError();
    auto b = backwardProgram(s);
    if (!b)
      return b.takeError();
    st.forward = std::move(*f);
    st.backward = std::move(*b);
    for (ValueId v : stash_[s])
      st.stash.push_back(g_.value(v).name);
    for (size_t i = 0; i < g_.nodes().size(); ++i)
      if (stageOf_[i] == s)
        (isBackward(g_.node(i)) ? st.backwardFlops : st.forwardFlops) +=
            nodeFlops(g_, g_.node(i));
    plan.stages.push_back(std::move(st));
  }

  // Parameters per rank, tied ones and their messages.
  std::vector<std::vector<ValueId>> held(P);
  std::vector<TiedMessage> messages;
  for (ValueId p : g_.params()) {
    std::vector<int64_t> ranks;
    for (int64_t s = 0; s < S_; ++s)
      if (holds_[s][p] && !llvm::is_contained(ranks, rankOf(s)))
        ranks.push_back(rankOf(s));
    llvm::sort(ranks);
    for (int64_t r : ranks)
      held[r].push_back(p);
    if (ranks.size() < 2)
      continue;
    plan.tied.push_back({g_.value(p).name, ranks});
    for (size_t i = 1; i < ranks.size(); ++i) {
      TiedMessage m{p, ranks[0], ranks[i], nextTag_, nextTag_ + 1};
      nextTag_ += 2;
      messages.push_back(m);
    }
  }
  for (int64_t r = 0; r < P; ++r) {
    auto opt = buildStageOptimizer(g_, mesh_, r, held[r], messages,
                                   o_.optimizer, o_.distributedOptimizer);
    if (!opt)
      return opt.takeError();
    plan.optimizers.push_back(std::move(*opt));
  }
  if (auto e = verifyPipelinePlan(plan))
    return e;
  return plan;
}

} // namespace

llvm::Expected<PipelinePlan> buildPipeline(const Graph &micro,
                                           const PipelineOptions &options) {
  return Cutter(micro, options).run();
}

} // namespace strata
