//===- CombineAllReduce.cpp - One all_reduce for many small ones
//-----------===//
#include "passes/spmd/CombineAllReduce.h"

#include "passes/PassManager.h"
#include "passes/pipeline/GraphCopy.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cassert>
#include <queue>

namespace strata {

namespace {

struct Group {
  std::vector<int32_t> members; // node indices, program order
  int64_t bytes = 0;
};

/// The group (axes as a set), reduce kind and dtype.
std::string keyOf(const Graph &g, const Node &n) {
  StrList axes = n.attrs.getStrings("axes");
  llvm::sort(axes);
  return llvm::join(axes, ",") + "|" + n.attrs.getString("reduce", "sum") +
         "|" + dtypeName(g.type(n.operands[0]).dtype).str();
}

/// Greedy groups of the all_reduces with key `key` (see the header);
/// groupOf[node] = group index or -1. Within one key a group closes when
/// the next one opens, so every edge between two groups goes from the
/// earlier to the later: merging them cannot make a cycle. (Groups of two
/// keys at once could: a1 -> b2 and b1 -> a2.)
std::vector<Group> findGroups(const Graph &g, llvm::StringRef key,
                              int64_t maxBytes, std::vector<int32_t> &groupOf) {
  std::vector<Group> groups;
  groupOf.assign(g.nodes().size(), -1);
  // The groups each value depends on through a member's result (sorted).
  std::vector<llvm::SmallVector<int32_t, 2>> dep(g.numValues());
  int32_t open = -1;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node &n = g.node(i);
    llvm::SmallVector<int32_t, 4> d;
    for (ValueId v : n.operands)
      d.append(dep[v].begin(), dep[v].end());
    llvm::sort(d);
    d.erase(std::unique(d.begin(), d.end()), d.end());
    if (n.op == OpKind::AllReduce && keyOf(g, n) == key) {
      const TensorType &t = g.type(n.operands[0]);
      bool joins = open >= 0 && !llvm::is_contained(d, open) &&
                   groups[open].bytes + t.bytes() <= maxBytes;
      if (!joins) {
        groups.emplace_back();
        open = int32_t(groups.size() - 1);
      }
      int32_t id = open;
      groups[id].members.push_back(int32_t(i));
      groups[id].bytes += t.bytes();
      groupOf[i] = id;
      d.insert(llvm::upper_bound(d, id), id);
    }
    for (ValueId r : n.results)
      dep[r].assign(d.begin(), d.end());
  }
  return groups;
}

/// A name used in neither graph (nodes of `src` not copied yet keep theirs).
std::string freshName(const Graph &src, const Graph &dst,
                      const std::string &hint) {
  auto unused = [&](const std::string &n) {
    return src.lookup(n) == kNoValue && dst.lookup(n) == kNoValue;
  };
  if (unused(hint))
    return hint;
  for (int64_t k = 1;; ++k)
    if (std::string n = hint + "." + std::to_string(k); unused(n))
      return n;
}

/// Emits one group's combined all_reduce into the copy.
void emitGroup(const Graph &src, const Group &group, GraphCopier &c) {
  Graph &dst = c.dst();
  auto fresh = [&](const std::string &hint) {
    return freshName(src, dst, hint);
  };
  const Node &first = src.node(group.members[0]);
  DType dtype = src.type(first.operands[0]).dtype;
  int64_t total = 0;
  llvm::SmallVector<ValueId, 16> flat;
  llvm::SmallVector<std::string, 16> names; // distinct member scopes
  for (int32_t m : group.members) {
    const Node &n = src.node(m);
    ValueId in = c.mapped(n.operands[0]);
    int64_t count = dst.type(in).numElements();
    TensorType t{dtype, {count}};
    int32_t r =
        dst.addNode(OpKind::Reshape, {in}, {t}, {{"shape", IntList{count}}},
                    n.scope, {fresh(dst.value(in).name + ".flat")});
    flat.push_back(dst.node(r).results[0]);
    if (!llvm::is_contained(names, n.scope))
      names.push_back(n.scope);
    total += count;
  }
  // The members' common scope prefix, at a '.' boundary.
  llvm::StringRef scope = names[0];
  for (llvm::StringRef s : names) {
    size_t k = 0;
    while (k < scope.size() && k < s.size() && scope[k] == s[k])
      ++k;
    scope = scope.take_front(k);
  }
  if (!llvm::all_of(names, [&](llvm::StringRef s) {
        return s.size() == scope.size() || s[scope.size()] == '.';
      }))
    scope = scope.take_front(
        scope.rfind('.') == llvm::StringRef::npos ? 0 : scope.rfind('.'));
  std::string list = names.size() <= 4
                         ? llvm::join(names, ", ")
                         : llvm::join(names.begin(), names.begin() + 3, ", ") +
                               ", ... " + std::to_string(names.size()) +
                               " scopes";
  TensorType all{dtype, {total}};
  int32_t cat = dst.addNode(OpKind::Concat, flat, {all}, {{"dim", int64_t(0)}},
                            scope, {fresh("combined.in")});
  Attrs attrs = first.attrs;
  attrs.set("reason", ("combined: " + llvm::Twine(group.members.size()) +
                       " independent all_reduces over the same group in one "
                       "call (" +
                       list + ")")
                          .str());
  attrs.set("src", scope.str());
  int32_t red = dst.addNode(OpKind::AllReduce, {dst.node(cat).results[0]},
                            {all}, attrs, scope, {fresh("combined.out")});
  ValueId reduced = dst.node(red).results[0];
  int64_t start = 0;
  for (int32_t m : group.members) {
    const Node &n = src.node(m);
    const Value &out = src.value(n.results[0]);
    int64_t count = out.type.numElements();
    int32_t s =
        dst.addNode(OpKind::Slice, {reduced}, {TensorType{dtype, {count}}},
                    {{"dim", int64_t(0)}, {"start", start}, {"size", count}},
                    n.scope, {fresh(out.name + ".part")});
    int32_t r = dst.addNode(
        OpKind::Reshape, {dst.node(s).results[0]}, {out.type},
        {{"shape", IntList(out.type.shape.begin(), out.type.shape.end())}},
        n.scope, {out.name});
    ValueId back = dst.node(r).results[0];
    dst.value(back).sharding = out.sharding;
    c.setMapped(n.results[0], back);
    start += count;
  }
}

/// Combines the groups of one key; returns the all_reduces removed.
int64_t combineKey(Graph &g, llvm::StringRef key, int64_t maxBytes) {
  std::vector<int32_t> groupOf;
  std::vector<Group> groups = findGroups(g, key, maxBytes, groupOf);
  int64_t removed = 0;
  for (const Group &grp : groups)
    removed += int64_t(grp.members.size()) - 1;
  if (removed == 0)
    return 0;

  // Units: a group of 2+ members, or one node. Kahn's algorithm, the ready
  // unit with the smallest position first (a group sits at its last member).
  size_t N = g.nodes().size();
  std::vector<int32_t> unitOf(N);
  std::vector<std::vector<int32_t>> unitNodes;
  std::vector<int32_t> position;
  std::vector<int32_t> unitOfGroup(groups.size(), -1);
  for (size_t i = 0; i < N; ++i) {
    int32_t gid = groupOf[i];
    if (gid >= 0 && groups[gid].members.size() > 1) {
      if (unitOfGroup[gid] < 0) {
        unitOfGroup[gid] = int32_t(unitNodes.size());
        unitNodes.emplace_back();
        position.push_back(groups[gid].members.back());
      }
      unitOf[i] = unitOfGroup[gid];
    } else {
      unitOf[i] = int32_t(unitNodes.size());
      unitNodes.emplace_back();
      position.push_back(int32_t(i));
    }
    unitNodes[unitOf[i]].push_back(int32_t(i));
  }
  size_t U = unitNodes.size();
  std::vector<llvm::SmallVector<int32_t, 4>> succ(U);
  std::vector<int32_t> indegree(U, 0);
  for (size_t i = 0; i < N; ++i)
    for (ValueId v : g.node(i).operands) {
      int32_t def = g.value(v).defNode;
      if (def < 0 || unitOf[def] == unitOf[i])
        continue;
      succ[unitOf[def]].push_back(unitOf[i]);
      ++indegree[unitOf[i]];
    }
  using Ready = std::pair<int32_t, int32_t>; // (position, unit)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (size_t u = 0; u < U; ++u)
    if (indegree[u] == 0)
      ready.push({position[u], int32_t(u)});

  Graph out = emptyLike(g);
  GraphCopier c(g, out);
  for (ValueId v : g.inputs())
    c.addInput(v);
  size_t emitted = 0;
  while (!ready.empty()) {
    int32_t u = ready.top().second;
    ready.pop();
    ++emitted;
    const std::vector<int32_t> &nodes = unitNodes[u];
    if (nodes.size() == 1 && (groupOf[nodes[0]] < 0 ||
                              groups[groupOf[nodes[0]]].members.size() == 1))
      c.copyNode(nodes[0]);
    else
      emitGroup(g, groups[groupOf[nodes[0]]], c);
    for (int32_t s : succ[u])
      if (--indegree[s] == 0)
        ready.push({position[s], s});
  }
  // Unreachable by the argument of findGroups; never leave a partial graph.
  assert(emitted == U && "combining made a cycle");
  if (emitted != U)
    return 0;
  llvm::SmallVector<ValueId, 16> outputs;
  for (ValueId v : g.outputs())
    outputs.push_back(c.mapped(v));
  out.setOutputs(outputs);
  g = std::move(out);
  return removed;
}
} // namespace

int64_t combineAllReduces(Graph &g, int64_t maxBytes) {
  // One key at a time (see findGroups), in order of first appearance.
  std::vector<std::string> keys;
  for (const Node &n : g.nodes())
    if (n.op == OpKind::AllReduce && !llvm::is_contained(keys, keyOf(g, n)))
      keys.push_back(keyOf(g, n));
  int64_t removed = 0;
  for (const std::string &key : keys)
    removed += combineKey(g, key, maxBytes);
  return removed;
}

namespace {
class CombineAllReducePass : public Pass {
public:
  explicit CombineAllReducePass(int64_t maxBytes) : maxBytes_(maxBytes) {}
  llvm::StringRef name() const override { return "combine-all-reduce"; }
  llvm::Expected<bool> run(Graph &g) override {
    return combineAllReduces(g, maxBytes_) > 0;
  }

private:
  int64_t maxBytes_;
};
} // namespace

std::unique_ptr<Pass> createCombineAllReducePass(int64_t maxBytes) {
  return std::make_unique<CombineAllReducePass>(maxBytes);
}

void registerCombineAllReducePass() {
  registerPass(
      {"combine-all-reduce",
       "merge independent all_reduces of one group into one call "
       "{bucket_bytes=N}",
       [](const PassOptions &options) -> llvm::Expected<std::unique_ptr<Pass>> {
         if (auto e = checkPassOptions("combine-all-reduce", options,
                                       {"bucket_bytes"}))
           return e;
         int64_t bytes = kDefaultAllReduceBucketBytes;
         if (auto it = options.find("bucket_bytes"); it != options.end())
           if (llvm::StringRef(it->second).getAsInteger(10, bytes) ||
               bytes <= 0)
             return llvm::createStringError(
                 llvm::inconvertibleErrorCode(),
                 "combine-all-reduce: bucket_bytes must be a positive "
                 "integer (got '" +
                     it->second + "')");
         return createCombineAllReducePass(bytes);
       }});
}

} // namespace strata
