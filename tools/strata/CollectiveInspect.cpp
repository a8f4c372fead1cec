//===- CollectiveInspect.cpp - `strata inspect PLAN --collectives`
//---------===//
#include "tools/strata/CollectiveInspect.h"

#include "passes/pipeline/GradReduction.h"
#include "proto/GraphProto.h"
#include "tools/strata/PipelineInspect.h"

#include "llvm/Support/FormatVariadic.h"

namespace strata {

llvm::Expected<std::vector<CollectiveUse>> planCollectives(const pb::Plan &plan,
                                                           int64_t rank) {
  std::vector<CollectiveUse> uses;
  auto add = [&](const std::string &label, const pb::Graph &proto,
                 int64_t runs) -> llvm::Error {
    auto g = graphFromProto(proto);
    if (!g)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     label + ": " + toString(g.takeError()));
    listCollectives(*g, label, runs, uses);
    return llvm::Error::success();
  };
  int64_t microbatches = std::max<int64_t>(1, plan.parallel().microbatches());
  for (const pb::PipelineStage &s : plan.pipeline().stages()) {
    if (s.rank() != rank)
      continue;
    if (auto e = add(stageLabel(plan, s, "F"), s.forward(), microbatches))
      return e;
    if (auto e = add(stageLabel(plan, s, "B"), s.backward(), microbatches))
      return e;
  }
  if (rank < plan.pipeline().optimizers_size()) {
    // The dp reductions the runtime makes in place before the optimizer,
    // overlapping the backward (runtime/parallel/GradReducer.h).
    auto opt = graphFromProto(plan.pipeline().optimizers(rank));
    if (!opt)
      return opt.takeError();
    listCollectives(gradientReductions(*opt), "gradients (overlap B)", 1,
                    uses);
    if (auto e = add("optimizer", plan.pipeline().optimizers(rank), 1))
      return e;
    // ZeRO-1's parameter gathers, overlapping the next forward
    // (runtime/parallel/ParamGatherer.h).
    listCollectives(parameterGathers(*opt), "parameters (overlap F)", 1, uses);
  }
  return uses;
}

namespace {
std::string opLabel(const CollectiveUse &u) {
  return u.reduce.empty() ? u.op : u.op + "(" + u.reduce + ")";
}

std::string groupLabel(const CollectiveUse &u) {
  if (u.op == "send" || u.op == "recv")
    return u.group;
  return u.group + " (" + std::to_string(u.groupSize) + ")";
}

std::string provenance(const CollectiveUse &u) {
  if (u.reason.empty())
    return u.src.empty() ? "(no provenance recorded)" : u.src;
  return (u.src.empty() ? "" : u.src + ": ") + u.reason;
}
} // namespace

llvm::Error printCollectives(llvm::raw_ostream &os, const pb::Plan &plan) {
  os << "collectives per optimizer step (" << parallelSummary(plan)
     << "); bytes per device, sent = on the wire under ring algorithms\n";
  int64_t pp = std::max<int64_t>(1, plan.parallel().pp());
  for (int64_t r = 0; r < pp; ++r) {
    auto uses = planCollectives(plan, r);
    if (!uses)
      return uses.takeError();
    os << "pipeline rank " << r << " (stages " << stagesOf(plan, r) << ")\n";
    os << llvm::formatv("  {0,-22} {1,5}  {2,-17} {3,-12} {4,11} {5,11}  {6}\n",
                        "program", "runs", "op", "group", "bytes", "sent/call",
                        "why (scope: reason)");
    for (const CollectiveUse &u : *uses)
      os << llvm::formatv(
          "  {0,-22} {1,5}  {2,-17} {3,-12} {4,11} {5,11}  {6}\n", u.program,
          "x" + std::to_string(u.runsPerStep), opLabel(u), groupLabel(u),
          formatBytes(u.bytes), formatBytes(u.sentBytes), provenance(u));
    if (uses->empty())
      os << "  (none: every value this rank needs is local)\n";
    os << "  per step:";
    for (const CollectiveTotal &t : totalCollectives(*uses))
      os << "  " << t.group << ": " << t.calls << " calls, "
         << formatBytes(t.bytes) << " moved, " << formatBytes(t.sentBytes)
         << " sent;";
    os << '\n';
  }
  return llvm::Error::success();
}

llvm::Expected<llvm::json::Object> collectivesJson(const pb::Plan &plan) {
  llvm::json::Array ranks;
  int64_t pp = std::max<int64_t>(1, plan.parallel().pp());
  for (int64_t r = 0; r < pp; ++r) {
    auto uses = planCollectives(plan, r);
    if (!uses)
      return uses.takeError();
    llvm::json::Array list, totals;
    for (const CollectiveUse &u : *uses)
      list.push_back(llvm::json::Object{{"program", u.program},
                                        {"runs_per_step", u.runsPerStep},
                                        {"op", u.op},
                                        {"reduce", u.reduce},
                                        {"group", u.group},
                                        {"group_size", u.groupSize},
                                        {"bytes", u.bytes},
                                        {"sent_bytes", u.sentBytes},
                                        {"value", u.value},
                                        {"src", u.src},
                                        {"reason", u.reason}});
    for (const CollectiveTotal &t : totalCollectives(*uses))
      totals.push_back(llvm::json::Object{{"group", t.group},
                                          {"calls", t.calls},
                                          {"bytes", t.bytes},
                                          {"sent_bytes", t.sentBytes}});
    ranks.push_back(llvm::json::Object{{"rank", r},
                                       {"collectives", std::move(list)},
                                       {"totals", std::move(totals)}});
  }
  return llvm::json::Object{{"ranks", std::move(ranks)}};
}

} // namespace strata
