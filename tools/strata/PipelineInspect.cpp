//===- PipelineInspect.cpp - What `strata inspect` shows of a pipeline
//-----===//
#include "tools/strata/PipelineInspect.h"

#include "ir/IRText.h"
#include "proto/GraphProto.h"
#include "runtime/io/AtomicFile.h"
#include "tools/strata/PipelineProto.h"
#include "tools/strata/ScheduleSvg.h"

#include "llvm/Support/Format.h"

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error printProgram(llvm::raw_ostream &os, const std::string &label,
                         const pb::Graph &proto) {
  auto g = graphFromProto(proto);
  if (!g)
    return err(label + ": " + toString(g.takeError()));
  os << "# ---- " << label << '\n';
  printGraph(os, *g);
  return llvm::Error::success();
}

/// `v` with `digits` decimals.
std::string fixed(double v, int digits) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.*f", digits, v);
  return s;
}

} // namespace

std::string stageLabel(const pb::Plan &plan, const pb::PipelineStage &s,
                       llvm::StringRef kind) {
  std::string label = "stage " + std::to_string(s.index()) + " " + kind.str();
  if (plan.schedule().virtual_stages() > 1)
    label += " (rank " + std::to_string(s.rank()) + ", chunk " +
             std::to_string(s.chunk()) + ")";
  return label;
}

/// "2 stages: 0, 2" -> the stage indices of rank r.
std::string stagesOf(const pb::Plan &plan, int64_t r) {
  std::string out;
  for (const pb::PipelineStage &s : plan.pipeline().stages())
    if (s.rank() == r)
      out += (out.empty() ? "" : ",") + std::to_string(s.index());
  return out;
}

std::string parallelSummary(const pb::Plan &plan) {
  const pb::ParallelConfig &c = plan.parallel();
  std::string s = "tp=" + std::to_string(c.tp()) +
                  " dp=" + std::to_string(c.dp()) +
                  " pp=" + std::to_string(c.pp());
  if (c.sp())
    s += " sp";
  return s + ", " + c.schedule() + ", " + std::to_string(c.microbatches()) +
         " microbatches, recompute " + c.recompute();
}

llvm::Error printPrograms(llvm::raw_ostream &os, const pb::Plan &plan) {
  for (const pb::PipelineStage &s : plan.pipeline().stages()) {
    if (auto e = printProgram(os, stageLabel(plan, s, "F"), s.forward()))
      return e;
    if (auto e = printProgram(os, stageLabel(plan, s, "B"), s.backward()))
      return e;
  }
  for (int r = 0; r < plan.pipeline().optimizers_size(); ++r)
    if (auto e = printProgram(os, "rank " + std::to_string(r) + " optimizer",
                              plan.pipeline().optimizers(r)))
      return e;
  return llvm::Error::success();
}

void printMemoryReport(llvm::raw_ostream &os, const pb::Plan &plan) {
  const pb::MemoryPlan &m = plan.memory();
  os << "memory per device by pipeline rank (" << parallelSummary(plan)
     << "; saved state: " << m.saved_state_model() << ")\n";
  const int labelW = 22, colW = 13;
  auto row = [&](llvm::StringRef label, auto cell) {
    os << "  " << llvm::left_justify(label, labelW);
    for (const pb::MemoryPlan::Rank &r : m.ranks())
      os << llvm::right_justify(cell(r), colW);
    os << '\n';
  };
  row("", [&](const pb::MemoryPlan::Rank &r) {
    return "rank " + std::to_string(r.rank());
  });
  row("stages",
      [&](const pb::MemoryPlan::Rank &r) { return stagesOf(plan, r.rank()); });
  row("parameters", [](const pb::MemoryPlan::Rank &r) {
    return formatBytes(r.parameters());
  });
  row("gradients",
      [](const pb::MemoryPlan::Rank &r) { return formatBytes(r.gradients()); });
  row("optimizer state", [](const pb::MemoryPlan::Rank &r) {
    return formatBytes(r.optimizer_state());
  });
  row("master params", [](const pb::MemoryPlan::Rank &r) {
    return formatBytes(r.master_params());
  });
  row("stashed activations",
      [](const pb::MemoryPlan::Rank &r) { return formatBytes(r.stash()); });
  row("workspace",
      [](const pb::MemoryPlan::Rank &r) { return formatBytes(r.workspace()); });
  row("peak",
      [](const pb::MemoryPlan::Rank &r) { return formatBytes(r.peak()); });
  row("  at", [](const pb::MemoryPlan::Rank &r) { return r.peak_at(); });
  row("stash per microbatch", [](const pb::MemoryPlan::Rank &r) {
    std::string s;
    for (int64_t b : r.stash_per_microbatch())
      s += (s.empty() ? "" : "+") + formatBytes(b);
    return s;
  });
  row("microbatches in flight", [](const pb::MemoryPlan::Rank &r) {
    std::string s;
    for (int64_t n : r.in_flight())
      s += (s.empty() ? "" : "+") + std::to_string(n);
    return s;
  });
  os << "stash of one microbatch by unit:\n";
  // Units in model order: embed, layers.0, layers.1, ..., head.
  std::vector<std::pair<int64_t, std::string>> units;
  for (const auto &[unit, bytes] : m.stash_per_unit()) {
    int64_t key = unit == "embed" ? -1 : unit == "head" ? INT64_MAX : 0;
    llvm::StringRef rest(unit);
    if (rest.consume_front("layers."))
      rest.getAsInteger(10, key);
    units.push_back({key, unit});
  }
  llvm::sort(units);
  for (const auto &[key, unit] : units)
    os << "  " << llvm::left_justify(unit, labelW)
       << llvm::right_justify(formatBytes(m.stash_per_unit().at(unit)), colW)
       << '\n';
}

llvm::Error printSchedule(llvm::raw_ostream &os, const pb::Plan &plan,
                          llvm::StringRef svgPath) {
  auto s = scheduleFromProto(plan.schedule());
  if (!s)
    return err("invalid schedule in the plan: " + toString(s.takeError()));
  Timeline t = simulate(
      *s, [&](int64_t, const Instr &i) { return unitDuration(*s, i); });
  int64_t P = s->pp, M = s->microbatches, V = s->spec.virtualStages;
  std::string formula =
      (V > 1 ? "(p-1)/(v*m) = " + std::to_string(P - 1) + "/(" +
                   std::to_string(V) + "*" + std::to_string(M) + ")"
             : "(p-1)/m = " + std::to_string(P - 1) + "/" + std::to_string(M)) +
      " = " + fixed(idealBubbleFraction(*s), 3);
  std::string simulated = fixed(t.bubbleFraction(), 3);
  os << "schedule " << s->spec.str() << ", pp=" << P << ", " << M
     << " microbatches\n";
  for (int64_t r = 0; r < P; ++r) {
    os << "  rank " << r << ":";
    for (const Instr &i : s->ranks[r])
      os << ' ' << i.str();
    os << '\n';
  }
  os << "bubble fraction " << formula
     << " (simulated with F=1, B=2 per stage: " << simulated << ")\n";
  std::string title =
      s->spec.str() + " schedule, pp=" + std::to_string(P) + ", " +
      std::to_string(M) + " microbatches" +
      (V > 1 ? ", " + std::to_string(V) + " chunks per rank" : std::string());
  std::string subtitle =
      "bubble fraction " + formula + "; simulated " + simulated;
  if (auto e = writeFileAtomically(svgPath, [&](llvm::raw_ostream &out) {
        writeScheduleSvg(out, *s, t, title, subtitle);
        return llvm::Error::success();
      }))
    return e;
  os << "wrote " << svgPath << '\n';
  return llvm::Error::success();
}

llvm::json::Object pipelineJson(const pb::Plan &plan) {
  const pb::ParallelConfig &c = plan.parallel();
  llvm::json::Array layers, stages, ranks;
  for (int64_t l : c.recomputed_layers())
    layers.push_back(l);
  for (const pb::PipelineStage &s : plan.pipeline().stages())
    stages.push_back(llvm::json::Object{{"index", s.index()},
                                        {"rank", s.rank()},
                                        {"chunk", s.chunk()},
                                        {"first_layer", s.first_layer()},
                                        {"num_layers", s.num_layers()},
                                        {"embedding", s.embedding()},
                                        {"head", s.head()},
                                        {"forward_flops", s.forward_flops()},
                                        {"backward_flops", s.backward_flops()},
                                        {"stash", int64_t(s.stash_size())}});
  for (const pb::MemoryPlan::Rank &r : plan.memory().ranks()) {
    llvm::json::Array perMb, inFlight;
    for (int64_t b : r.stash_per_microbatch())
      perMb.push_back(b);
    for (int64_t n : r.in_flight())
      inFlight.push_back(n);
    ranks.push_back(
        llvm::json::Object{{"rank", r.rank()},
                           {"parameters", r.parameters()},
                           {"gradients", r.gradients()},
                           {"optimizer_state", r.optimizer_state()},
                           {"master_params", r.master_params()},
                           {"stash", r.stash()},
                           {"workspace", r.workspace()},
                           {"peak", r.peak()},
                           {"peak_at", r.peak_at()},
                           {"stash_per_microbatch", std::move(perMb)},
                           {"in_flight", std::move(inFlight)},
                           {"max_stash", r.max_stash()}});
  }
  llvm::json::Object units;
  for (const auto &[unit, bytes] : plan.memory().stash_per_unit())
    units[unit] = bytes;
  return llvm::json::Object{
      {"parallel", llvm::json::Object{{"tp", c.tp()},
                                      {"dp", c.dp()},
                                      {"pp", c.pp()},
                                      {"sp", c.sp()},
                                      {"microbatches", c.microbatches()},
                                      {"schedule", c.schedule()},
                                      {"recompute", c.recompute()},
                                      {"recomputed_layers", std::move(layers)},
                                      {"memory_budget", c.memory_budget()},
                                      {"stages", std::move(stages)}}},
      {"schedule", llvm::json::Object{{"kind", plan.schedule().kind()},
                                      {"bubble_fraction",
                                       plan.schedule().bubble_fraction()}}},
      {"memory", llvm::json::Object{
                     {"saved_state_model", plan.memory().saved_state_model()},
                     {"ranks", std::move(ranks)},
                     {"stash_per_unit", std::move(units)}}}};
}

} // namespace strata
