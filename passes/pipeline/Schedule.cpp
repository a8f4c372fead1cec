//===- Schedule.cpp - Pipeline schedules
//-----------------------------------===//
#include "passes/pipeline/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>

namespace strata {

namespace {
llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

Instr fwd(int64_t k, int64_t c) {
  return {Instr::Forward, int32_t(k), int32_t(c)};
}
Instr bwd(int64_t k, int64_t c) {
  return {Instr::Backward, int32_t(k), int32_t(c)};
}

/// Megatron-LM's interleaved 1F1B for rank `r`
/// (forward_backward_pipelining_with_interleaving): the k-th forward runs
/// microbatch (k / PV) * P + k % P on chunk (k % PV) / P; backwards visit the
/// chunks in reverse.
std::vector<Instr> interleavedRank(int64_t P, int64_t V, int64_t M, int64_t r) {
  int64_t total = M * V;
  int64_t warmup =
      M == P ? total : std::min((P - r - 1) * 2 + (V - 1) * P, total);
  auto microbatch = [&](int64_t k) { return (k / (P * V)) * P + k % P; };
  auto chunk = [&](int64_t k, bool forward) {
    int64_t c = (k % (P * V)) / P;
    return forward ? c : V - 1 - c;
  };
  std::vector<Instr> out;
  for (int64_t k = 0; k < warmup; ++k)
    out.push_back(fwd(microbatch(k), chunk(k, true)));
  for (int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(fwd(microbatch(k + warmup), chunk(k + warmup, true)));
    out.push_back(bwd(microbatch(k), chunk(k, false)));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    out.push_back(bwd(microbatch(k), chunk(k, false)));
  return out;
}

struct SimResult {
  Timeline timeline;
  std::string deadlock; // empty when every instruction ran
};

SimResult run(const Schedule &s,
              const std::function<double(int64_t, const Instr &)> &duration) {
  int64_t P = s.pp, S = s.numStages(), M = s.microbatches;
  // end[kind][k * S + j]: when F/B of microbatch k on stage j finished.
  std::vector<double> end[2] = {std::vector<double>(M * S, -1),
                                std::vector<double>(M * S, -1)};
  SimResult res;
  Timeline &t = res.timeline;
  t.ranks.resize(P);
  std::vector<size_t> next(P, 0);
  std::vector<double> freeAt(P, 0);
  auto ready = [&](int64_t r, const Instr &i, double &at) {
    int64_t j = s.stageOf(r, i.chunk);
    int64_t from = i.kind == Instr::Forward ? j - 1 : j + 1;
    if (from < 0 || from >= S)
      return true;
    double e = end[i.kind][i.microbatch * S + from];
    at = std::max(at, e);
    return e >= 0;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t r = 0; r < P; ++r) {
      while (next[r] < s.ranks[r].size()) {
        const Instr &i = s.ranks[r][next[r]];
        double start = freeAt[r];
        if (i.kind == Instr::Optimizer || !ready(r, i, start))
          break;
        double stop = start + duration(r, i);
        end[i.kind][i.microbatch * S + s.stageOf(r, i.chunk)] = stop;
        t.ranks[r].push_back({i, start, stop});
        freeAt[r] = stop;
        ++next[r];
        progress = true;
      }
    }
  }
  for (int64_t r = 0; r < P; ++r)
    if (next[r] >= s.ranks[r].size() ||
        s.ranks[r][next[r]].kind != Instr::Optimizer) {
      std::string blocked;
      for (int64_t q = 0; q < P; ++q)
        if (next[q] < s.ranks[q].size())
          blocked += (blocked.empty() ? "" : ", ") +
                     ("rank " + llvm::Twine(q) + " waits in " +
                      s.ranks[q][next[q]].str())
                         .str();
      res.deadlock = "the schedule deadlocks: " + blocked;
      return res;
    }
  double barrier = *std::max_element(freeAt.begin(), freeAt.end());
  t.pipelineEnd = barrier;
  for (int64_t r = 0; r < P; ++r) {
    const Instr &opt = s.ranks[r][next[r]];
    t.ranks[r].push_back({opt, barrier, barrier + duration(r, opt)});
    double busy = 0;
    for (const Timeline::Slot &slot : t.ranks[r])
      if (slot.instr.kind != Instr::Optimizer)
        busy += slot.end - slot.start;
    t.busyPerRank = std::max(t.busyPerRank, busy);
  }
  return res;
}
} // namespace

std::string ScheduleSpec::str() const {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    break;
  }
  return "interleaved:" + std::to_string(virtualStages);
}

llvm::Expected<ScheduleSpec> parseScheduleSpec(llvm::StringRef text) {
  if (text == "gpipe")
    return ScheduleSpec{ScheduleKind::GPipe, 1};
  if (text == "1f1b")
    return ScheduleSpec{ScheduleKind::OneFOneB, 1};
  llvm::StringRef v = text;
  int64_t n;
  if (v.consume_front("interleaved:") && !v.getAsInteger(10, n))
    return ScheduleSpec{ScheduleKind::Interleaved, n};
  return err("unknown schedule '" + text +
             "' (use gpipe, 1f1b or interleaved:V with V model chunks per "
             "pipeline rank)");
}

std::string Instr::str() const {
  if (kind == Optimizer)
    return "OPT";
  std::string s = (kind == Forward ? "F" : "B") + std::to_string(microbatch);
  if (chunk)
    s += ".c" + std::to_string(chunk);
  return s;
}

llvm::Expected<Schedule> buildSchedule(const ScheduleSpec &spec, int64_t pp,
                                       int64_t M) {
  if (pp < 1 || M < 1)
    return err(
        "pipeline schedules need pp >= 1 and microbatches >= 1 (got pp=" +
        llvm::Twine(pp) + ", microbatches=" + llvm::Twine(M) + ")");
  int64_t V = spec.virtualStages;
  if (spec.kind == ScheduleKind::Interleaved) {
    if (pp < 2)
      return err("interleaved:" + llvm::Twine(V) +
                 " interleaves the chunks of several pipeline ranks; with "
                 "pp=1 use 1f1b");
    if (V < 2)
      return err("interleaved:" + llvm::Twine(V) +
                 " needs at least 2 chunks per rank (interleaved:1 is 1f1b)");
    if (M % pp != 0) {
      int64_t lo = M / pp * pp, hi = lo + pp;
      std::string use = (lo ? std::to_string(lo) + " or " : std::string()) +
                        std::to_string(hi);
      return err("interleaved:" + llvm::Twine(V) +
                 " runs microbatches in groups of pp=" + llvm::Twine(pp) +
                 ", so microbatches must be a multiple of " + llvm::Twine(pp) +
                 " (got " + llvm::Twine(M) + "; use " + use +
                 ", or the 1f1b schedule)");
    }
  } else if (V != 1) {
    return err("only the interleaved schedule has virtual stages");
  }
  Schedule s;
  s.spec = spec;
  s.pp = pp;
  s.microbatches = M;
  s.ranks.resize(pp);
  for (int64_t r = 0; r < pp; ++r) {
    std::vector<Instr> &out = s.ranks[r];
    switch (spec.kind) {
    case ScheduleKind::GPipe:
      for (int64_t k = 0; k < M; ++k)
        out.push_back(fwd(k, 0));
      for (int64_t k = 0; k < M; ++k)
        out.push_back(bwd(k, 0));
      break;
    case ScheduleKind::OneFOneB: {
      int64_t warmup = std::min(pp - r - 1, M);
      for (int64_t k = 0; k < warmup; ++k)
        out.push_back(fwd(k, 0));
      for (int64_t k = 0; k < M - warmup; ++k) {
        out.push_back(fwd(k + warmup, 0));
        out.push_back(bwd(k, 0));
      }
      for (int64_t k = M - warmup; k < M; ++k)
        out.push_back(bwd(k, 0));
      break;
    }
    case ScheduleKind::Interleaved:
      out = interleavedRank(pp, V, M, r);
      break;
    }
    out.push_back({Instr::Optimizer, -1, 0});
  }
  if (auto e = validateSchedule(s))
    return e;
  return s;
}

double idealBubbleFraction(const Schedule &s) {
  return double(s.pp - 1) / double(s.spec.virtualStages * s.microbatches);
}

llvm::Error validateSchedule(const Schedule &s) {
  int64_t V = s.spec.virtualStages, M = s.microbatches;
  if (int64_t(s.ranks.size()) != s.pp)
    return err("the schedule has " + llvm::Twine(s.ranks.size()) +
               " rank streams for pp=" + llvm::Twine(s.pp));
  for (int64_t r = 0; r < s.pp; ++r) {
    const std::vector<Instr> &is = s.ranks[r];
    auto fail = [&](const Instr &i, const llvm::Twine &why) {
      return err("rank " + llvm::Twine(r) + ": " + i.str() + " " + why);
    };
    // state[k * V + c]: 0 nothing ran, 1 F ran, 2 B ran.
    std::vector<int> state(M * V, 0);
    for (size_t n = 0; n < is.size(); ++n) {
      const Instr &i = is[n];
      if (i.kind == Instr::Optimizer) {
        if (n + 1 != is.size())
          return fail(i, "is not the last instruction");
        continue;
      }
      if (i.microbatch < 0 || i.microbatch >= M || i.chunk < 0 || i.chunk >= V)
        return fail(i, "is out of range (" + llvm::Twine(M) +
                           " microbatches, " + llvm::Twine(V) + " chunks)");
      int &st = state[i.microbatch * V + i.chunk];
      if (i.kind == Instr::Forward && st != 0)
        return fail(i, "runs twice");
      if (i.kind == Instr::Backward && st != 1)
        return fail(i, st == 0 ? "runs before its forward" : "runs twice");
      ++st;
    }
    if (is.empty() || is.back().kind != Instr::Optimizer)
      return err("rank " + llvm::Twine(r) + " does not end with the optimizer");
    for (int64_t k = 0; k < M; ++k)
      for (int64_t c = 0; c < V; ++c)
        if (state[k * V + c] != 2)
          return err("rank " + llvm::Twine(r) + " never runs " +
                     (state[k * V + c] ? bwd(k, c) : fwd(k, c)).str());
  }
  SimResult res = run(s, [](int64_t, const Instr &) { return 1.0; });
  if (!res.deadlock.empty())
    return err(res.deadlock);
  return llvm::Error::success();
}

std::vector<std::vector<int64_t>> maxInFlight(const Schedule &s) {
  std::vector<std::vector<int64_t>> out(s.pp);
  for (int64_t r = 0; r < s.pp; ++r) {
    std::vector<int64_t> now(s.spec.virtualStages, 0);
    out[r].assign(s.spec.virtualStages, 0);
    for (const Instr &i : s.ranks[r]) {
      if (i.kind == Instr::Forward)
        out[r][i.chunk] = std::max(out[r][i.chunk], ++now[i.chunk]);
      else if (i.kind == Instr::Backward)
        --now[i.chunk];
    }
  }
  return out;
}

double Timeline::bubbleFraction() const {
  return busyPerRank > 0 ? (pipelineEnd - busyPerRank) / busyPerRank : 0;
}

Timeline simulate(const Schedule &s,
                  const std::function<double(int64_t, const Instr &)> &d) {
  return run(s, d).timeline;
}

double unitDuration(const Schedule &s, const Instr &i) {
  double v = double(s.spec.virtualStages);
  switch (i.kind) {
  case Instr::Forward:
    return 1.0 / v;
  case Instr::Backward:
    return 2.0 / v;
  case Instr::Optimizer:
    break;
  }
  return 0.5;
}

} // namespace strata
