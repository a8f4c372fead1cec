//===- Autodiff.cpp - Reverse-mode automatic differentiation
//---------------===//
//
// Two sweeps over the forward graph: forward, which values depend on a param;
// backward, which of those reach the loss (they need adjoints) and how many
// contributions each will receive. Then the nodes are visited in reverse, each
// through the gradient rule of its op, and contributions are summed with `add`
// as they arrive, so the final one can be named `d.<value>` / `grad.<param>`.
//
//===----------------------------------------------------------------------===//
#include "passes/autodiff/Autodiff.h"

#include "passes/PassManager.h"
#include "passes/autodiff/GradRules.h"

#include <iterator>

namespace strata {
namespace autodiff {

llvm::Error noGradient(const GradCtx &c) {
  const Graph &g = c.b.graph();
  std::string what = c.node.results.empty() ? std::string(opName(c.node.op))
                                            : "%" + g.value(c.y()).name;
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "no gradient rule for " + opName(c.node.op) + " (" + what +
          " in scope '" + c.node.scope +
          "' lies between a param and the loss; only the ops of a logical "
          "forward graph are differentiable: run autodiff before the passes "
          "that add grad ops, collectives or rank-dependent ops)");
}

// Grad ops (no second order), the optimizer update, collectives, the
// rank-dependent ops of partitioned graphs and fused kernels.
#define NO_GRADIENT(Enum)                                                      \
  llvm::Expected<Grads> grad##Enum(GradCtx &c) { return noGradient(c); }
NO_GRADIENT(GeluGrad)
NO_GRADIENT(SiluGrad)
NO_GRADIENT(ReluGrad)
NO_GRADIENT(LayerNormGrad)
NO_GRADIENT(RmsNormGrad)
NO_GRADIENT(SoftmaxGrad)
NO_GRADIENT(AttentionGrad)
NO_GRADIENT(DropoutGrad)
NO_GRADIENT(CrossEntropyGrad)
NO_GRADIENT(AdamWUpdate)
NO_GRADIENT(AllReduce)
NO_GRADIENT(AllGather)
NO_GRADIENT(ReduceScatter)
NO_GRADIENT(AllToAll)
NO_GRADIENT(BroadcastFrom)
NO_GRADIENT(Send)
NO_GRADIENT(Recv)
NO_GRADIENT(ShardSlice)
NO_GRADIENT(PickLabel)
NO_GRADIENT(OneHot)
NO_GRADIENT(Fused)
#undef NO_GRADIENT

// Creation ops have no operands, hence nothing to propagate to.
llvm::Expected<Grads> gradFill(GradCtx &) { return Grads{}; }
llvm::Expected<Grads> gradIota(GradCtx &) { return Grads{}; }

namespace {
// The rule table: one entry per op, in Ops.def order. A rule missing from the
// rule files is a link error.
constexpr GradRule kGradRules[] = {
#define OP(Enum, Name, NumOperands, NumResults) &grad##Enum,
#include "ir/Ops.def"
};
static_assert(std::size(kGradRules) == kNumOps,
              "every op of ir/Ops.def needs a gradient rule");

llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

class Differentiator {
public:
  explicit Differentiator(Graph &g) : g_(g), b_(g) {}
  llvm::Error run();

private:
  llvm::Error checkInput();
  void analyze();
  llvm::Error backprop(int32_t n);
  void contribute(ValueId v, ValueId c, bool fresh);
  std::string finalName(ValueId v);
  std::string uniqueName(const std::string &want);
  void finish(size_t numForwardNodes);

  Graph &g_;
  Builder b_;
  ValueId loss_ = kNoValue;
  // Indexed by forward value.
  std::vector<char> needs_;   // on a path from a param to the loss
  std::vector<int> total_;    // contributions it will receive
  std::vector<int> received_; // contributions received so far
  std::vector<ValueId> adj_;  // running adjoint
};

llvm::Error Differentiator::checkInput() {
  if (g_.outputs().size() != 1)
    return err("expected one graph output, the scalar loss, got " +
               llvm::Twine(g_.outputs().size()));
  loss_ = g_.outputs()[0];
  const TensorType &t = g_.type(loss_);
  if (t.rank() != 0 || !isFloat(t.dtype))
    return err("the loss %" + g_.value(loss_).name +
               " must be a scalar float, got " + t.str());
  for (const Node &n : g_.nodes())
    if (isBackward(n))
      return err(
          "graph is already differentiated (%" +
          g_.value(n.results.empty() ? n.operands[0] : n.results[0]).name +
          " is a backward node)");
  for (ValueId p : g_.params())
    if (g_.lookup("grad." + g_.value(p).name) != kNoValue)
      return err("the gradient name %grad." + g_.value(p).name +
                 " is already taken");
  return llvm::Error::success();
}

void Differentiator::analyze() {
  size_t nv = g_.numValues();
  std::vector<char> dep(nv, 0); // float and computed from a param
  for (ValueId v : g_.inputs())
    dep[v] = g_.value(v).isParam() && isFloat(g_.type(v).dtype);
  for (const Node &n : g_.nodes()) {
    bool d = llvm::any_of(n.operands, [&](ValueId o) { return dep[o]; });
    for (ValueId r : n.results)
      dep[r] = d && isFloat(g_.type(r).dtype);
  }
  needs_.assign(nv, 0);
  total_.assign(nv, 0);
  received_.assign(nv, 0);
  adj_.assign(nv, kNoValue);
  needs_[loss_] = dep[loss_];
  for (const Node &n : llvm::reverse(g_.nodes())) {
    if (llvm::none_of(n.results, [&](ValueId r) { return needs_[r]; }))
      continue;
    for (ValueId o : n.operands)
      if (dep[o]) {
        needs_[o] = 1;
        ++total_[o];
      }
  }
}

// `want`, or `want.1`, `want.2`, ... if taken. Local counters keep names
// stable when unrelated parts of the graph change.
std::string Differentiator::uniqueName(const std::string &want) {
  std::string name = want;
  for (int i = 1; g_.lookup(name) != kNoValue; ++i)
    name = want + "." + std::to_string(i);
  return name;
}

std::string Differentiator::finalName(ValueId v) {
  const Value &val = g_.value(v);
  if (val.isParam())
    return "grad." + val.name; // checked free up front
  return uniqueName("d." + val.name);
}

void Differentiator::contribute(ValueId v, ValueId c, bool fresh) {
  int k = received_[v]++;
  bool last = received_[v] == total_[v];
  if (total_[v] == 1) {
    if (fresh)
      g_.rename(c, finalName(v));
    adj_[v] = c;
    return;
  }
  std::string base = "d." + g_.value(v).name + ".";
  if (fresh)
    g_.rename(c, uniqueName(base + std::to_string(k)));
  if (adj_[v] == kNoValue) {
    adj_[v] = c;
    return;
  }
  std::string sum =
      last ? finalName(v) : uniqueName(base + "acc" + std::to_string(k));
  adj_[v] = b_.create1(OpKind::Add, {adj_[v], c}, {}, sum);
}

llvm::Error Differentiator::backprop(int32_t n) {
  Node node = g_.node(n);
  if (llvm::none_of(node.results, [&](ValueId r) { return needs_[r]; }))
    return llvm::Error::success();
  GradCtx c{b_, node, {}, {}};
  for (ValueId r : node.results)
    c.dys.push_back(needs_[r] ? adj_[r] : kNoValue);
  for (ValueId o : node.operands)
    c.needed.push_back(needs_[o]);
  b_.setScope(node.scope);

  size_t first = g_.numValues();
  auto grads = kGradRules[int(node.op)](c);
  if (!grads)
    return grads.takeError();
  assert(grads->size() == node.operands.size() && "rule returned wrong arity");

  // Name the rule's temporaries after the node (`<result>.bwd.<op>`);
  // contribute() names the contributions.
  llvm::SmallVector<ValueId, 4> wanted;
  for (size_t i = 0; i < node.operands.size(); ++i)
    if (c.wants(i)) {
      assert((*grads)[i] != kNoValue && "rule skipped a needed operand");
      wanted.push_back((*grads)[i]);
    }
  std::string tmp = g_.value(node.results[0]).name + ".bwd.";
  for (ValueId v = ValueId(first), e = ValueId(g_.numValues()); v < e; ++v)
    if (!llvm::is_contained(wanted, v)) {
      OpKind op = g_.node(g_.value(v).defNode).op;
      g_.rename(v, uniqueName(tmp + opName(op).str()));
    }

  llvm::SmallVector<ValueId, 4> renamed;
  for (size_t i = 0; i < node.operands.size(); ++i) {
    if (!c.wants(i))
      continue;
    ValueId gv = (*grads)[i];
    bool fresh = size_t(gv) >= first && !llvm::is_contained(renamed, gv);
    if (fresh)
      renamed.push_back(gv);
    contribute(node.operands[i], gv, fresh);
  }
  return llvm::Error::success();
}

void Differentiator::finish(size_t numForwardNodes) {
  llvm::SmallVector<ValueId> outs{loss_};
  for (ValueId p : g_.params()) {
    std::string name = "grad." + g_.value(p).name;
    ValueId gv = adj_[p];
    if (gv == kNoValue) {
      // The param does not reach the loss: its gradient is zero.
      b_.setScope("");
      gv = b_.fill(0.0, g_.type(p));
      g_.rename(gv, name);
    } else if (g_.value(gv).name != name) {
      // The adjoint aliases another value (e.g. dy of a same-shape add).
      Value val = g_.value(gv); // a copy: reshape() appends values
      if (llvm::StringRef(val.name).startswith("grad.")) {
        b_.setScope(g_.node(val.defNode).scope);
        gv = b_.reshape(gv, val.type.shape);
        g_.rename(gv, name);
      } else {
        g_.rename(gv, name);
      }
    }
    outs.push_back(gv);
  }
  for (size_t n = numForwardNodes; n < g_.nodes().size(); ++n)
    g_.node(int32_t(n)).attrs.set(kBackwardAttr, true);
  g_.setOutputs(outs);
}

llvm::Error Differentiator::run() {
  if (auto e = checkInput())
    return e;
  size_t numForwardNodes = g_.nodes().size();
  analyze();
  if (needs_[loss_]) {
    Value loss = g_.value(loss_); // a copy: fill() may move the values
    b_.setScope(loss.isInput() ? "" : g_.node(loss.defNode).scope);
    adj_[loss_] = b_.fill(1.0, loss.type);
    g_.rename(adj_[loss_], uniqueName("d." + loss.name));
  }
  for (int32_t n = int32_t(numForwardNodes) - 1; n >= 0; --n)
    if (auto e = backprop(n))
      return e;
  finish(numForwardNodes);
  return llvm::Error::success();
}

class AutodiffPass : public Pass {
public:
  llvm::StringRef name() const override { return "autodiff"; }
  llvm::Expected<bool> run(Graph &g) override {
    if (auto e = differentiate(g))
      return e;
    return true;
  }
};
} // namespace
} // namespace autodiff

llvm::Error differentiate(Graph &g) {
  Graph work = g;
  if (auto e = autodiff::Differentiator(work).run())
    return e;
  g = std::move(work);
  return llvm::Error::success();
}

std::unique_ptr<Pass> createAutodiffPass() {
  return std::make_unique<autodiff::AutodiffPass>();
}

void registerAutodiffPass() {
  registerPass(
      {"autodiff", "append the backward graph: outputs [loss, grad.<param>...]",
       [](const PassOptions &options) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("autodiff", options, {}))
           return e;
         return createAutodiffPass();
       }});
}

} // namespace strata
