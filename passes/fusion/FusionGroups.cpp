//===- FusionGroups.cpp - Which nodes the fusion pass puts in one kernel --===//
#include "passes/fusion/FusionGroups.h"

#include "passes/autodiff/Autodiff.h"

#include <algorithm>

namespace strata {

namespace {

// Element types the kernel renderers read (codegen/KernelPlan.h). bf16 and
// f16 are storage: a kernel loads them as f32, computes in f32 and rounds
// once, when it stores.
bool isFloatKernelDType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 ||
         t == DType::F16;
}

bool isKernelDType(DType t) {
  return isFloatKernelDType(t) || t == DType::I32 || t == DType::I64;
}

bool hasSplitDim(const Value &v) {
  return v.sharding && llvm::any_of(v.sharding->dims, [](const auto &axes) {
           return !axes.empty();
         });
}

class Grouper {
public:
  Grouper(const Graph &g, const FusionOptions &options)
      : g_(g), options_(options), users_(g.users()),
        groupOf_(g.nodes().size(), -1), seen_(g.nodes().size(), 0),
        isOutput_(g.numValues(), false) {
    for (ValueId v : g.outputs())
      isOutput_[v] = true;
  }

  std::vector<FusionGroup> run();

private:
  struct Group {
    FusionGroup g;
    Shape domain;
    int64_t inputs = 0; ///< FusionOptions::maxInputs's count
    bool backward = false;
    bool alive = true;
  };

  enum class Lead { None, Anchor, Row };
  int32_t newGroup(int32_t node, Lead lead);
  /// Merges group b into group a if the rules allow; returns whether a and b
  /// are one group afterwards.
  bool tryMerge(int32_t a, int32_t b);
  /// Whether groups a and b may become one kernel. Each is convex and reads
  /// none of its own column sums alone, so only what lies between them is
  /// checked, walking from the smaller: no path leaves one and enters the
  /// other through other nodes, and neither reads a column sum or a row
  /// op's dw / db of the other (complete only after the kernel's loop).
  bool canJoin(int32_t a, int32_t b);
  /// Moves group b's members into group a.
  void join(int32_t a, int32_t b);
  /// Adds column sum `node` to the group of its operand's producer.
  void joinAsColumnSum(int32_t node);
  /// A matmul that may lead the group of `consumer` (its only user).
  bool isAnchorFor(int32_t producer, ValueId v, int32_t consumer) const;
  /// Whether a result of group `grp` has its anchor's type: the runtime
  /// runs the matmul into that result's buffer (codegen/KernelPlan.h). A
  /// 16-bit matmul whose epilogue ends in a cast to f32 has none.
  bool holdsAnchor(const FusionGroup &grp) const;
  /// Takes the anchor out of `grp` (a source of the group: what remains is
  /// still convex).
  void dropAnchor(FusionGroup &grp);

  const Graph &g_;
  FusionOptions options_;
  std::vector<llvm::SmallVector<int32_t, 2>> users_;
  std::vector<int32_t> groupOf_;
  std::vector<Group> groups_;
  // Scratch for canJoin: the nodes a walk has visited, valid while equal to
  // stamp_.
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  std::vector<bool> isOutput_;
};

int32_t Grouper::newGroup(int32_t node, Lead lead) {
  const Node &n = g_.node(node);
  Group grp;
  grp.g.members.push_back(node);
  if (lead == Lead::Anchor)
    grp.g.anchor = node;
  if (lead == Lead::Row)
    grp.g.row = node;
  grp.domain = g_.type(n.results[0]).shape;
  grp.inputs = int64_t(n.operands.size());
  grp.backward = isBackward(n);
  groups_.push_back(std::move(grp));
  groupOf_[node] = int32_t(groups_.size() - 1);
  return groupOf_[node];
}

/// Whether `v`, made by `def`, is complete only after a kernel's loop: a
/// column sum, or a row op's dw / db.
static bool isSumResult(const Node &def, ValueId v) {
  return def.op == OpKind::ReduceSum ||
         (rowOpOperands(def.op) && v != def.results[0]);
}

bool Grouper::canJoin(int32_t a, int32_t b) {
  if (groups_[a].g.members.size() > groups_[b].g.members.size())
    std::swap(a, b);
  llvm::ArrayRef<int32_t> small = groups_[a].g.members,
                          big = groups_[b].g.members;
  auto in = [&](int32_t n, int32_t grp) { return groupOf_[n] == grp; };
  for (int32_t m : small) {
    const Node &node = g_.node(m);
    for (ValueId v : node.operands) {
      int32_t p = g_.value(v).defNode;
      if (p >= 0 && in(p, b) && isSumResult(g_.node(p), v))
        return false;
    }
    for (ValueId r : node.results)
      if (isSumResult(node, r) &&
          llvm::any_of(users_[r], [&](int32_t u) { return in(u, b); }))
        return false;
  }
  // Forward from the small group through other nodes up to the big one's
  // last member, then backward down to its first: reaching the big group
  // closes a path that leaves the union and comes back.
  llvm::SmallVector<int32_t, 32> work;
  auto walk = [&](bool forward) {
    ++stamp_;
    auto next = [&](int32_t n, auto &&visit) {
      if (forward) {
        for (ValueId r : g_.node(n).results)
          for (int32_t u : users_[r])
            visit(u);
      } else {
        for (ValueId v : g_.node(n).operands)
          if (int32_t p = g_.value(v).defNode; p >= 0)
            visit(p);
      }
    };
    auto inRange = [&](int32_t n) {
      return forward ? n <= big.back() : n >= big.front();
    };
    auto enqueue = [&](int32_t n) {
      if (!in(n, a) && !in(n, b) && inRange(n) && seen_[n] != stamp_) {
        seen_[n] = stamp_;
        work.push_back(n);
      }
    };
    for (int32_t m : small)
      next(m, enqueue);
    bool reached = false;
    while (!work.empty() && !reached) {
      next(work.pop_back_val(), [&](int32_t n) {
        reached |= in(n, b);
        enqueue(n);
      });
    }
    work.clear();
    return reached;
  };
  return !walk(/*forward=*/true) && !walk(/*forward=*/false);
}

void Grouper::join(int32_t a, int32_t b) {
  Group &ga = groups_[a], &gb = groups_[b];
  llvm::SmallVectorImpl<int32_t> &m = ga.g.members;
  size_t mid = m.size();
  m.append(gb.g.members.begin(), gb.g.members.end());
  if (mid && m[mid - 1] > m[mid])
    std::inplace_merge(m.begin(), m.begin() + mid, m.end());
  ga.g.anchor = std::max(ga.g.anchor, gb.g.anchor);
  ga.g.row = std::max(ga.g.row, gb.g.row);
  ga.inputs += gb.inputs;
  for (int32_t n : gb.g.members)
    groupOf_[n] = a;
  gb.alive = false;
  gb.g.members.clear();
}

void Grouper::joinAsColumnSum(int32_t node) {
  const Node &n = g_.node(node);
  int32_t p = g_.value(n.operands[0]).defNode;
  if (p < 0 || groupOf_[p] < 0 || groups_[groupOf_[p]].g.anchor == p)
    return;
  int32_t target = groupOf_[p];
  if (groups_[target].backward != isBackward(n) ||
      groups_[target].domain != g_.type(n.operands[0]).shape)
    return;
  int32_t sum = newGroup(node, Lead::None);
  if (canJoin(target, sum)) {
    join(target, sum);
    return;
  }
  groups_[sum].alive = false;
  groupOf_[node] = -1;
}

bool Grouper::tryMerge(int32_t a, int32_t b) {
  if (a == b)
    return true;
  // The smaller group joins the larger: a node is relabelled O(log n) times.
  if (groups_[a].g.members.size() < groups_[b].g.members.size())
    std::swap(a, b);
  Group &ga = groups_[a], &gb = groups_[b];
  auto led = [](const Group &x) { return x.g.anchor >= 0 || x.g.row >= 0; };
  if (ga.domain != gb.domain || ga.backward != gb.backward ||
      (led(ga) && led(gb)) || ga.inputs + gb.inputs > options_.maxInputs)
    return false;
  if (!canJoin(a, b))
    return false;
  join(a, b);
  return true;
}

bool Grouper::isAnchorFor(int32_t producer, ValueId v, int32_t consumer) const {
  const Node &p = g_.node(producer);
  return options_.matmulEpilogues && p.op == OpKind::MatMul &&
         p.operands.size() == 2 && groupOf_[producer] < 0 && !isOutput_[v] &&
         isFloatKernelDType(g_.type(v).dtype) &&
         g_.type(v).shape == g_.type(g_.node(consumer).results[0]).shape &&
         users_[v].size() == 1 && users_[v][0] == consumer;
}

bool Grouper::holdsAnchor(const FusionGroup &grp) const {
  const TensorType &t = g_.type(g_.node(grp.anchor).results[0]);
  int32_t self = groupOf_[grp.anchor];
  return llvm::any_of(grp.members, [&](int32_t m) {
    ValueId r = g_.node(m).results[0];
    return m != grp.anchor && g_.type(r) == t &&
           (isOutput_[r] || llvm::any_of(users_[r], [&](int32_t u) {
              return groupOf_[u] != self;
            }));
  });
}

void Grouper::dropAnchor(FusionGroup &grp) {
  groupOf_[grp.anchor] = -1;
  grp.members.erase(llvm::find(grp.members, grp.anchor));
  grp.anchor = -1;
}

std::vector<FusionGroup> Grouper::run() {
  // Producer -> consumer (and matmul -> epilogue).
  for (int32_t n = 0; n < int32_t(g_.nodes().size()); ++n) {
    const Node &node = g_.node(n);
    // Over a split dim a column sum is the local, partial sum, as the
    // unfused node computes it.
    if (options_.columnSums && isColumnSum(g_, node)) {
      joinAsColumnSum(n);
      continue;
    }
    if (options_.rowOps && isFusableRowOp(g_, node)) {
      // Prologue: the groups of its row operands' producers.
      newGroup(n, Lead::Row);
      for (int k = 0; k < rowOpOperands(node.op); ++k) {
        int32_t p = g_.value(node.operands[k]).defNode;
        if (p >= 0 && groupOf_[p] >= 0)
          tryMerge(groupOf_[n], groupOf_[p]);
      }
      continue;
    }
    if (!isFusableElementwise(g_, node))
      continue;
    newGroup(n, Lead::None);
    for (ValueId v : node.operands) {
      int32_t p = g_.value(v).defNode;
      if (p < 0)
        continue;
      if (groupOf_[p] >= 0) {
        tryMerge(groupOf_[n], groupOf_[p]); // refused if p is a column sum
      } else if (isAnchorFor(p, v, n)) {
        int32_t ga = newGroup(p, Lead::Anchor);
        if (!tryMerge(groupOf_[n], ga)) {
          groups_[ga].alive = false;
          groupOf_[p] = -1;
        }
      }
    }
  }
  // Siblings: groups that read the same value. A single element (the
  // optimizer's lr, step and clip coefficient, read by every parameter's
  // update) costs nothing to read again, so it joins nothing; merging on it
  // tried every pair of the thousands of updates of a large model.
  for (ValueId v = 0; v < ValueId(g_.numValues()); ++v) {
    if (g_.type(v).numElements() <= 1)
      continue;
    llvm::SmallVector<int32_t, 4> seen;
    for (int32_t u : users_[v]) {
      if (groupOf_[u] < 0 || groups_[groupOf_[u]].g.anchor == u)
        continue;
      int32_t gu = groupOf_[u];
      bool joined = llvm::any_of(
          seen, [&](int32_t s) { return tryMerge(groupOf_[s], gu); });
      if (!joined)
        seen.push_back(u);
    }
  }
  std::vector<FusionGroup> out;
  for (Group &grp : groups_) {
    if (grp.alive && grp.g.anchor >= 0 && !holdsAnchor(grp.g))
      dropAnchor(grp.g);
    if (grp.alive && grp.g.members.size() >= 2)
      out.push_back(grp.g);
  }
  std::sort(out.begin(), out.end(), [](const auto &x, const auto &y) {
    return x.members.front() < y.members.front();
  });
  return out;
}

} // namespace

bool isFusableElementwise(const Graph &g, const Node &n) {
  bool elementwise = isElementwiseUnary(n.op) || isElementwiseBinary(n.op) ||
                     n.op == OpKind::GeluGrad || n.op == OpKind::SiluGrad ||
                     n.op == OpKind::ReluGrad || n.op == OpKind::Dropout ||
                     n.op == OpKind::DropoutGrad;
  if (!elementwise || n.results.size() != 1)
    return false;
  // A B program's gradient accumulation reads and writes the gradient
  // buffer the runtime binds to both its operand and its result: a fused
  // matmul epilogue would run the matmul into that buffer first.
  if (n.attrs.getBool("accumulate"))
    return false;
  const Value &r = g.value(n.results[0]);
  if (!isFloatKernelDType(r.type.dtype))
    return false;
  // A 16-bit copy of a parameter (mixed precision's cast) stays a node of
  // its own: the memory plan counts it as Megatron's persistent 16-bit
  // parameter (passes/memory/MemoryPlan.h) by finding the casts that read
  // the parameter.
  if (n.op == OpKind::Cast && g.value(n.operands[0]).isParam())
    return false;
  if (llvm::any_of(n.operands,
                   [&](ValueId v) { return !isKernelDType(g.type(v).dtype); }))
    return false;
  bool dropout = n.op == OpKind::Dropout || n.op == OpKind::DropoutGrad;
  return !(dropout && hasSplitDim(r));
}

bool isFusableRowOp(const Graph &g, const Node &n) {
  if (!rowOpOperands(n.op))
    return false;
  const TensorType &t = g.type(n.results[0]);
  // Rank >= 2: a row op's [C] vectors then never have the domain's shape,
  // so no group member can compute them (they are read from memory).
  if (t.rank() < 2 || t.shape.back() > kMaxFusedRow || t.shape.back() < 1)
    return false;
  auto isFloat = [&](ValueId v) { return isFloatKernelDType(g.type(v).dtype); };
  return llvm::all_of(n.operands, isFloat) && llvm::all_of(n.results, isFloat);
}

std::vector<FusionGroup> findFusionGroups(const Graph &g,
                                          const FusionOptions &options) {
  return Grouper(g, options).run();
}

} // namespace strata
