//===- PipelineCut.cpp - Balancing blocks over pipeline stages
//-------------===//
#include "passes/pipeline/PipelineCut.h"

#include "passes/memory/Activations.h"
#include "passes/pipeline/CostModel.h"
#include "passes/pipeline/ModelUnits.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "pipeline: " + msg);
}

/// Parameter, gradient and two AdamW moments per parameter byte.
constexpr int64_t kStaticBytesPerParamByte = 4;

UnitCosts::Cost *costOf(UnitCosts &c, const ModelUnit &u) {
  switch (u.kind) {
  case ModelUnit::Pre:
    return &c.pre;
  case ModelUnit::Post:
    return &c.post;
  case ModelUnit::Layer:
    return &c.layers[u.layer];
  case ModelUnit::Unknown:
    break;
  }
  return nullptr;
}

} // namespace

UnitCosts measureUnits(const Graph &g) {
  UnitCosts c;
  c.layers.resize(countLayers(g));
  auto users = g.users();
  for (const Node &n : g.nodes())
    if (UnitCosts::Cost *u = costOf(c, unitOfScope(n.scope)))
      u->flops += nodeCost(g, n);
  for (ValueId p : g.params())
    if (!users[p].empty())
      if (UnitCosts::Cost *u =
              costOf(c, unitOfScope(g.node(users[p][0]).scope)))
        u->paramBytes += g.type(p).bytes();
  for (const auto &[unit, bytes] : stashBytesByUnit(g, SavedStateModel::Strata))
    if (UnitCosts::Cost *u =
            costOf(c, unitOfScope(unit == "head" ? "loss" : unit)))
      u->stashBytes += bytes;
  return c;
}

llvm::Expected<StageCut> cutStages(const UnitCosts &c,
                                   llvm::ArrayRef<int64_t> inFlight,
                                   llvm::ArrayRef<int64_t> given, int64_t pp) {
  int64_t S = int64_t(inFlight.size()), L = int64_t(c.layers.size());
  if (L < S)
    return err(llvm::Twine(S) +
               " stages need at least one block each, but "
               "the model has " +
               llvm::Twine(L) + " (lower pp or the virtual stages)");
  std::vector<double> flops(L + 1, 0);
  std::vector<int64_t> params(L + 1, 0), stash(L + 1, 0);
  for (int64_t l = 0; l < L; ++l) {
    flops[l + 1] = flops[l] + c.layers[l].flops;
    params[l + 1] = params[l] + c.layers[l].paramBytes;
    stash[l + 1] = stash[l] + c.layers[l].stashBytes;
  }
  auto stageFlops = [&](int64_t s, int64_t a, int64_t b) {
    return flops[b] - flops[a] + (s == 0 ? c.pre.flops : 0) +
           (s == S - 1 ? c.post.flops : 0);
  };
  auto stageBytes = [&](int64_t s, int64_t a, int64_t b) {
    int64_t p = params[b] - params[a] + (s == 0 ? c.pre.paramBytes : 0) +
                (s == S - 1 ? c.post.paramBytes : 0);
    int64_t a_ = stash[b] - stash[a] + (s == 0 ? c.pre.stashBytes : 0) +
                 (s == S - 1 ? c.post.stashBytes : 0);
    return p * kStaticBytesPerParamByte + a_ * inFlight[s];
  };

  StageCut cut;
  std::string how;
  if (!given.empty()) {
    std::string list;
    int64_t sum = 0;
    for (int64_t n : given) {
      list += (list.empty() ? "" : ",") + std::to_string(n);
      sum += n;
    }
    if (int64_t(given.size()) != S)
      return err("--layers-per-stage " + list + " gives " +
                 llvm::Twine(given.size()) + " counts for " + llvm::Twine(S) +
                 " stages (one per stage: pp x virtual stages)");
    if (llvm::any_of(given, [](int64_t n) { return n < 1; }))
      return err("--layers-per-stage " + list +
                 ": every stage needs at least one block");
    if (sum != L)
      return err("--layers-per-stage " + list + " places " + llvm::Twine(sum) +
                 " blocks, but the model has " + llvm::Twine(L) +
                 " (every block goes to exactly one stage)");
    int64_t first = 0;
    for (int64_t n : given) {
      cut.firstLayer.push_back(first);
      cut.numLayers.push_back(n);
      first += n;
    }
    how = "as given by --layers-per-stage";
  } else {
    // Phase 1: the smallest achievable maximum of stage FLOPs.
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> best(S + 1,
                                          std::vector<double>(L + 1, inf));
    best[0][0] = 0;
    for (int64_t s = 1; s <= S; ++s)
      for (int64_t i = s; i <= L - (S - s); ++i)
        for (int64_t j = s - 1; j < i; ++j)
          best[s][i] = std::min(
              best[s][i], std::max(best[s - 1][j], stageFlops(s - 1, j, i)));
    double cap = best[S][L] * (1 + 1e-9);
    // Phase 2: among cuts within that maximum, the smallest maximum memory.
    const int64_t none = std::numeric_limits<int64_t>::max();
    std::vector<std::vector<int64_t>> mem(S + 1,
                                          std::vector<int64_t>(L + 1, none));
    std::vector<std::vector<int64_t>> from(S + 1,
                                           std::vector<int64_t>(L + 1, -1));
    mem[0][0] = 0;
    for (int64_t s = 1; s <= S; ++s)
      for (int64_t i = s; i <= L - (S - s); ++i)
        for (int64_t j = s - 1; j < i; ++j) {
          if (mem[s - 1][j] == none || stageFlops(s - 1, j, i) > cap)
            continue;
          int64_t m = std::max(mem[s - 1][j], stageBytes(s - 1, j, i));
          if (m < mem[s][i]) {
            mem[s][i] = m;
            from[s][i] = j;
          }
        }
    std::vector<int64_t> bounds{L};
    for (int64_t s = S; s > 0; --s)
      bounds.push_back(from[s][bounds.back()]);
    std::reverse(bounds.begin(), bounds.end());
    for (int64_t s = 0; s < S; ++s) {
      cut.firstLayer.push_back(bounds[s]);
      cut.numLayers.push_back(bounds[s + 1] - bounds[s]);
    }
    how = std::string("balanced by ") + nodeCostName() +
          " per microbatch, then by memory";
  }

  double total = stageFlops(0, 0, L) + (S > 1 ? c.post.flops : 0);
  llvm::raw_string_ostream os(cut.report);
  os << L << " blocks over " << S << " stage" << (S > 1 ? "s" : "") << ", "
     << how << '\n';
  for (int64_t s = 0; s < S; ++s) {
    int64_t a = cut.firstLayer[s], b = a + cut.numLayers[s];
    double f = stageFlops(s, a, b);
    cut.flops.push_back(f);
    std::string what = (s == 0 ? "embed + " : "") +
                       (b - a == 1 ? "layer " + std::to_string(a)
                                   : "layers " + std::to_string(a) + "-" +
                                         std::to_string(b - 1)) +
                       (s == S - 1 ? " + head" : "");
    os << "  stage " << s << " (rank " << s % pp
       << "): " << llvm::left_justify(what, 24)
       << llvm::right_justify(
              std::to_string(b - a) + (b - a == 1 ? " block " : " blocks"), 10)
       << "  " << llvm::right_justify(formatNodeCost(f), 11)
       << llvm::format(" per microbatch (%.0f%%)", 100 * f / total) << '\n';
  }
  int64_t lo = *std::min_element(cut.numLayers.begin(), cut.numLayers.end());
  int64_t hi = *std::max_element(cut.numLayers.begin(), cut.numLayers.end());
  if (lo != hi && given.empty()) {
    double block = flops[L] / double(L);
    os << "  uneven: " << L << " blocks "
       << (L % S ? "do not divide into " : "would divide evenly into ") << S
       << " stages" << (L % S ? "; " : ", but ")
       << "the slowest stage sets the step time, so blocks go where "
       << nodeCostName() << " allow (the head costs "
       << llvm::format("%.2g", c.post.flops / block)
       << " blocks, the embedding " << llvm::format("%.2g", c.pre.flops / block)
       << "), then where fewer microbatches are in flight\n";
  }
  return cut;
}

} // namespace strata
