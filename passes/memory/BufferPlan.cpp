//===- BufferPlan.cpp - Liveness and buffer offsets of one program
//---------===//
#include "passes/memory/BufferPlan.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace strata {

BufferPlan planBuffers(const Graph &g, const BufferPlanOptions &o) {
  const int64_t end = int64_t(g.nodes().size());
  struct Interval {
    ValueId v;
    int64_t first, last, bytes;
  };
  BufferPlan plan;
  plan.root.resize(g.numValues());
  for (ValueId v = 0; v < ValueId(g.numValues()); ++v)
    plan.root[v] = v;
  for (const Node &n : g.nodes())
    if (n.op == OpKind::Reshape)
      plan.root[n.results[0]] = plan.root[n.operands[0]];
  // Liveness over the uses of every alias of a stored value.
  std::vector<int64_t> last(g.numValues(), -1);
  std::vector<bool> isOutput(g.numValues(), false);
  for (int64_t n = 0; n < end; ++n)
    for (ValueId v : g.node(n).operands)
      last[plan.root[v]] = n;
  for (ValueId v : g.outputs()) {
    isOutput[v] = true;
    last[plan.root[v]] = end;
  }
  std::vector<Interval> intervals;
  for (int64_t n = 0; n < end; ++n)
    for (ValueId v : g.node(n).results) {
      if (plan.root[v] != v || (isOutput[v] && !o.outputsInArena))
        continue;
      int64_t bytes =
          (g.type(v).bytes() + o.alignment - 1) / o.alignment * o.alignment;
      intervals.push_back({v, n, std::max(last[v], n), bytes});
    }

  // Live bytes per node as a running sum of +bytes at first, -bytes after
  // last: linear in nodes + values.
  std::vector<int64_t> delta(end + 2, 0);
  for (const Interval &iv : intervals) {
    delta[iv.first] += iv.bytes;
    delta[std::min(iv.last, end - 1) + 1] -= iv.bytes;
  }
  int64_t live = 0;
  for (int64_t n = 0; n <= end; ++n)
    plan.peakLiveBytes = std::max(plan.peakLiveBytes, live += delta[n]);

  std::sort(intervals.begin(), intervals.end(), [](auto &a, auto &b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  plan.offsets.assign(g.numValues(), -1);
  // First fit: the lowest offset clear of every placed interval that
  // overlaps in time, walking those by offset and stopping at the first gap
  // that fits. The placed intervals are found through blocks of kBlock
  // nodes, each listing the intervals live in it, so a value meets only its
  // neighbours in time, not everything placed before it (a long program's
  // thousands of short-lived values made the flat walk quadratic).
  constexpr int64_t kBlock = 64;
  std::vector<std::vector<int32_t>> byBlock(end / kBlock + 1);
  std::vector<int64_t> placedAt(intervals.size(), -1);
  std::vector<uint32_t> seen(intervals.size(), 0);
  std::vector<int32_t> near;
  for (size_t i = 0; i < intervals.size(); ++i) {
    const Interval &iv = intervals[i];
    int64_t firstBlock = iv.first / kBlock,
            lastBlock = std::min(iv.last, end - 1) / kBlock;
    near.clear();
    for (int64_t b = firstBlock; b <= lastBlock; ++b)
      for (int32_t j : byBlock[b]) {
        const Interval &p = intervals[j];
        if (seen[j] == i + 1)
          continue;
        seen[j] = uint32_t(i + 1);
        if (p.first <= iv.last && iv.first <= p.last)
          near.push_back(j);
      }
    llvm::sort(near,
               [&](int32_t a, int32_t b) { return placedAt[a] < placedAt[b]; });
    int64_t off = 0;
    for (int32_t j : near) {
      if (off + iv.bytes <= placedAt[j])
        break;
      off = std::max(off, placedAt[j] + intervals[j].bytes);
    }
    placedAt[i] = off;
    plan.offsets[iv.v] = off;
    plan.arenaBytes = std::max(plan.arenaBytes, off + iv.bytes);
    for (int64_t b = firstBlock; b <= lastBlock; ++b)
      byBlock[b].push_back(int32_t(i));
  }
  return plan;
}

llvm::Error verifyBufferPlan(const Graph &g, const BufferPlan &plan) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the buffer plan of @" + g.name + " " + why);
  };
  if (plan.offsets.size() != g.numValues() || plan.root.size() != g.numValues())
    return fail("covers " + llvm::Twine(plan.offsets.size()) +
                " values, the program has " + llvm::Twine(g.numValues()));
  if (plan.arenaBytes < 0)
    return fail("has a negative arena size (" + llvm::Twine(plan.arenaBytes) +
                " bytes)");
  for (ValueId v = 0; v < ValueId(g.numValues()); ++v) {
    ValueId r = plan.root[v];
    if (r < 0 || r > v || plan.root[r] != r ||
        g.type(r).bytes() != g.type(v).bytes())
      return fail("aliases %" + g.value(v).name +
                  " to storage of another size");
    int64_t off = plan.offsets[v];
    // Compared without adding: a plan file's offset may be near INT64_MAX.
    if (off < -1 || (off >= 0 && (off > plan.arenaBytes ||
                                  g.type(v).bytes() > plan.arenaBytes - off)))
      return fail("places %" + g.value(v).name + " outside its arena");
  }
  return llvm::Error::success();
}

} // namespace strata
