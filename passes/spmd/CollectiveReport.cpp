//===- CollectiveReport.cpp - Every collective of a training step
//----------===//
#include "passes/spmd/CollectiveReport.h"

#include "llvm/ADT/StringExtras.h"

namespace strata {

namespace {
/// Bytes each device sends for one call moving `bytes` in a group of `n`.
int64_t ringSentBytes(OpKind k, int64_t bytes, int64_t n) {
  switch (k) {
  case OpKind::AllReduce:
    return 2 * (n - 1) * bytes / n;
  case OpKind::AllGather:
  case OpKind::ReduceScatter:
  case OpKind::AllToAll:
    return (n - 1) * bytes / n;
  case OpKind::Recv:
    return 0;
  default: // broadcast_from (the root sends it all), send
    return n > 1 ? bytes : 0;
  }
}
} // namespace

void listCollectives(const Graph &program, llvm::StringRef label,
                     int64_t runsPerStep, std::vector<CollectiveUse> &out) {
  for (const Node &n : program.nodes()) {
    if (!isCollective(n.op))
      continue;
    CollectiveUse u;
    u.program = label.str();
    u.runsPerStep = runsPerStep;
    u.op = opName(n.op).str();
    u.src = n.attrs.getString("src");
    u.reason = n.attrs.getString("reason");
    auto axes = n.attrs.getStrings("axes");
    u.group = llvm::join(axes, ",");
    bool p2p = n.op == OpKind::Send || n.op == OpKind::Recv;
    // The full buffer: all_gather's result, the operand otherwise.
    ValueId moved = n.op == OpKind::AllGather || n.op == OpKind::Recv
                        ? n.results[0]
                        : n.operands[0];
    u.value =
        program.value(n.op == OpKind::Send ? n.operands[0] : n.results[0]).name;
    u.bytes = program.value(moved).type.bytes();
    if (p2p) {
      u.groupSize = 2;
      u.group += " peer " + std::to_string(n.attrs.getInt("peer"));
    } else {
      u.reduce =
          n.op == OpKind::AllReduce ? n.attrs.getString("reduce", "sum") : "";
      u.groupSize = 1;
      for (const std::string &a : axes)
        u.groupSize *= program.mesh ? program.mesh->axisSize(a) : 1;
    }
    u.sentBytes = ringSentBytes(n.op, u.bytes, u.groupSize);
    out.push_back(std::move(u));
  }
}

std::vector<CollectiveTotal>
totalCollectives(const std::vector<CollectiveUse> &uses) {
  std::vector<CollectiveTotal> totals;
  for (const CollectiveUse &u : uses) {
    std::string group = llvm::StringRef(u.group).split(' ').first.str();
    auto it = llvm::find_if(
        totals, [&](const CollectiveTotal &t) { return t.group == group; });
    if (it == totals.end()) {
      totals.push_back({group});
      it = std::prev(totals.end());
    }
    it->calls += u.runsPerStep;
    it->bytes += u.runsPerStep * u.bytes;
    it->sentBytes += u.runsPerStep * u.sentBytes;
  }
  return totals;
}

} // namespace strata
