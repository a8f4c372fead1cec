//===- BufferPlan.cpp - Liveness and buffer offsets of one program
//---------===//
#include "passes/memory/BufferPlan.h"

#include <algorithm>

namespace strata {

BufferPlan planBuffers(const Graph &g, const BufferPlanOptions &o) {
  const int64_t end = int64_t(g.nodes().size());
  struct Interval {
    ValueId v;
    int64_t first, last, bytes;
  };
  std::vector<int64_t> last(g.numValues(), -1);
  std::vector<bool> isOutput(g.numValues(), false);
  for (int64_t n = 0; n < end; ++n)
    for (ValueId v : g.node(n).operands)
      last[v] = n;
  for (ValueId v : g.outputs()) {
    isOutput[v] = true;
    last[v] = end;
  }
  std::vector<Interval> intervals;
  for (int64_t n = 0; n < end; ++n)
    for (ValueId v : g.node(n).results) {
      if (isOutput[v] && !o.outputsInArena)
        continue;
      int64_t bytes =
          (g.type(v).bytes() + o.alignment - 1) / o.alignment * o.alignment;
      intervals.push_back({v, n, std::max(last[v], n), bytes});
    }

  BufferPlan plan;
  std::vector<int64_t> live(end + 1, 0);
  for (const Interval &iv : intervals)
    for (int64_t n = iv.first; n <= std::min(iv.last, end - 1); ++n)
      live[n] += iv.bytes;
  plan.peakLiveBytes = *std::max_element(live.begin(), live.end());

  std::sort(intervals.begin(), intervals.end(), [](auto &a, auto &b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.first < b.first;
  });
  plan.offsets.assign(g.numValues(), -1);
  std::vector<const Interval *> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (const Interval &iv : intervals) {
    // Offsets taken by overlapping placed intervals, sorted; first fit.
    busy.clear();
    for (const Interval *p : placed)
      if (p->first <= iv.last && iv.first <= p->last)
        busy.push_back({plan.offsets[p->v], plan.offsets[p->v] + p->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [lo, hi] : busy) {
      if (off + iv.bytes <= lo)
        break;
      off = std::max(off, hi);
    }
    plan.offsets[iv.v] = off;
    plan.arenaBytes = std::max(plan.arenaBytes, off + iv.bytes);
    placed.push_back(&iv);
  }
  return plan;
}

} // namespace strata
