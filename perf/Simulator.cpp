//===- Simulator.cpp - Event-driven simulation of a plan's rank streams ---===//
#include "perf/Simulator.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

namespace strata {

const char *phaseName(Phase p) {
  static const char *names[kNumPhases] = {"compute", "recompute", "optimizer",
                                          "comm_tp", "comm_dp",   "comm_pp",
                                          "bubble"};
  return names[size_t(p)];
}

double SimResult::bubbleFraction() const {
  double end = 0, busy = 0;
  for (const RankTime &r : ranks) {
    end = std::max(end, r.pipelineEnd);
    busy = std::max(busy, r.busy);
  }
  return busy > 0 ? (end - busy) / busy : 0;
}

namespace {

/// (sender, receiver, tag, microbatch).
using MessageKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;
struct Message {
  double arrival = 0, transfer = 0;
};

class Simulation {
public:
  Simulation(const SimPlan &plan, bool record) : plan_(plan), record_(record) {
    size_t p = size_t(plan.schedule.pp);
    ranks_.resize(p);
    state_.resize(p);
    barrier_.resize(p, -1);
    // Each chunk's first forward and last backward per rank: where Async
    // and Join ops of F and B programs run.
    firstForward_.resize(p);
    lastBackward_.resize(p);
    asyncEnds_.resize(p);
    for (size_t r = 0; r < p; ++r)
      for (size_t i = 0; i < stream(r).size(); ++i) {
        const Instr &in = stream(r)[i];
        size_t c = size_t(in.chunk);
        if (in.kind == Instr::Backward) {
          if (c >= lastBackward_[r].size())
            lastBackward_[r].resize(c + 1, 0);
          lastBackward_[r][c] = i;
        } else if (in.kind == Instr::Forward) {
          if (c >= firstForward_[r].size())
            firstForward_[r].resize(c + 1, SIZE_MAX);
          firstForward_[r][c] = std::min(firstForward_[r][c], i);
        }
      }
  }

  llvm::Expected<SimResult> run() {
    size_t p = state_.size(), finished = 0;
    while (finished < p) {
      bool progress = false;
      finished = 0;
      for (size_t r = 0; r < p; ++r) {
        progress |= advance(r);
        finished += done(r);
      }
      if (!progress && finished < p)
        return deadlock();
    }
    SimResult out;
    for (const RankTime &r : ranks_)
      out.stepTime = std::max(out.stepTime, r.end);
    for (RankTime &r : ranks_)
      r.phase[size_t(Phase::Idle)] += out.stepTime - r.end;
    out.ranks = std::move(ranks_);
    out.events = std::move(events_);
    return out;
  }

private:
  struct State {
    size_t instr = 0, op = 0;
    double clock = 0, programStart = 0;
    double second = 0; // where the rank's second stream's work ends
  };

  const std::vector<Instr> &stream(size_t r) const {
    return plan_.schedule.ranks[r];
  }
  bool done(size_t r) const { return state_[r].instr >= stream(r).size(); }

  const SimProgram &program(size_t r, const Instr &in) const {
    if (in.kind == Instr::Optimizer)
      return plan_.optimizer[r];
    size_t stage = size_t(plan_.schedule.stageOf(int64_t(r), in.chunk));
    return in.kind == Instr::Forward ? plan_.forward[stage]
                                     : plan_.backward[stage];
  }

  void spend(size_t r, Phase phase, double seconds, bool inFB) {
    ranks_[r].phase[size_t(phase)] += seconds;
    state_[r].clock += seconds;
    if (inFB && phase != Phase::Idle)
      ranks_[r].busy += seconds;
  }

  void event(size_t r, const std::string &name, const char *category,
             double start, double end, int64_t bytes, int stream = 0) {
    if (record_)
      events_.push_back(
          {int64_t(r), name, category, stream, start, end, bytes});
  }

  /// Runs rank r until it blocks or ends; true if it moved.
  bool advance(size_t r) {
    State &s = state_[r];
    bool moved = false;
    while (!done(r)) {
      const Instr &in = stream(r)[s.instr];
      const SimProgram &prog = program(r, in);
      bool fb = in.kind != Instr::Optimizer;
      if (s.op == 0)
        s.programStart = s.clock;
      if (s.op < prog.ops.size()) {
        const SimOp &op = prog.ops[s.op];
        double start = s.clock;
        switch (op.kind) {
        case SimOp::Work:
          spend(r, op.phase, op.seconds, fb);
          break;
        case SimOp::Send:
          messages_[{int64_t(r), op.peer, op.tag, in.microbatch}] = {
              s.clock + op.seconds, op.seconds};
          break;
        case SimOp::Recv: {
          auto it =
              messages_.find({op.peer, int64_t(r), op.tag, in.microbatch});
          if (it == messages_.end())
            return moved;
          double wait = it->second.arrival - s.clock;
          if (wait > 0) {
            double transfer = std::min(wait, it->second.transfer);
            spend(r, Phase::CommPp, transfer, false);
            spend(r, Phase::Idle, wait - transfer, false);
          }
          messages_.erase(it);
          break;
        }
        case SimOp::Async:
          if (!runsHere(r, in))
            break;
          start = std::max(s.clock, s.second);
          s.second = start + op.seconds;
          asyncEnds_[r].push_back(s.second);
          if (op.label >= 0)
            event(r, prog.labels[size_t(op.label)], "collective", start,
                  s.second, op.bytes, 1);
          ++s.op;
          moved = true;
          continue;
        case SimOp::Join: {
          if (!runsHere(r, in))
            break;
          double until = s.second;
          if (op.tag >= 0 && size_t(op.tag) < asyncEnds_[r].size())
            until = asyncEnds_[r][size_t(op.tag)];
          if (until > s.clock)
            spend(r, op.phase, until - s.clock, false);
          break;
        }
        case SimOp::Barrier:
          if (barrier_[r] < 0) {
            barrier_[r] = s.clock;
            moved = true;
          }
          if (!releaseBarrier(r, op))
            return moved;
          start = s.clock - op.seconds;
          break;
        }
        // A send's span is its transfer (the runtime's trace names sends
        // and recvs collectives too).
        if (op.label >= 0)
          event(r, prog.labels[size_t(op.label)], "collective", start,
                op.kind == SimOp::Send ? start + op.seconds : s.clock,
                op.bytes);
        ++s.op;
        moved = true;
        continue;
      }
      event(r, in.kind == Instr::Optimizer ? "optimizer" : in.str(), "program",
            s.programStart, s.clock, -1);
      if (fb)
        ranks_[r].pipelineEnd = s.clock;
      ranks_[r].end = s.clock;
      ++s.instr;
      s.op = 0;
      moved = true;
    }
    return moved;
  }

  /// Whether an Async or Join op of `in`'s program runs in this instance:
  /// in B only the chunk's last backward of the step, in F its first
  /// forward.
  bool runsHere(size_t r, const Instr &in) const {
    size_t c = size_t(in.chunk);
    if (in.kind == Instr::Backward)
      return lastBackward_[r][c] == state_[r].instr;
    if (in.kind == Instr::Forward)
      return firstForward_[r][c] == state_[r].instr;
    return true;
  }

  /// When every rank waits at its next barrier (rank r the last to
  /// arrive): all start at the last arrival and take
  /// `op.seconds`. The others move past theirs; r's caller moves it.
  bool releaseBarrier(size_t r, const SimOp &op) {
    double last = 0;
    for (double t : barrier_) {
      if (t < 0)
        return false;
      last = std::max(last, t);
    }
    for (size_t q = 0; q < state_.size(); ++q) {
      state_[q].clock = barrier_[q];
      spend(q, Phase::Idle, last - barrier_[q], false);
      spend(q, op.phase, op.seconds, false);
      barrier_[q] = -1;
      if (q == r)
        continue;
      // q waits at the same collective of its own optimizer program.
      const SimProgram &theirs = program(q, stream(q)[state_[q].instr]);
      const SimOp &mine = theirs.ops[state_[q].op];
      if (mine.label >= 0)
        event(q, theirs.labels[size_t(mine.label)], "collective", last,
              state_[q].clock, mine.bytes);
      ++state_[q].op;
    }
    return true;
  }

  llvm::Error deadlock() const {
    std::string what;
    for (size_t r = 0; r < state_.size(); ++r)
      if (!done(r))
        what += (what.empty() ? "" : ", ") + std::string("rank ") +
                std::to_string(r) + " at " + stream(r)[state_[r].instr].str() +
                " op " + std::to_string(state_[r].op);
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the simulated streams deadlock (" + what +
            "): a recv has no matching send, or the ranks' pp collectives "
            "differ");
  }

  const SimPlan &plan_;
  bool record_;
  std::vector<RankTime> ranks_;
  std::vector<State> state_;
  std::vector<double> barrier_; // arrival at the next barrier, -1: none
  std::vector<std::vector<size_t>> firstForward_; // [rank][chunk]: instr
  std::vector<std::vector<size_t>> lastBackward_; // [rank][chunk]: instr
  std::vector<std::vector<double>> asyncEnds_;    // [rank][k]: k-th Async
  std::map<MessageKey, Message> messages_;
  std::vector<SimEvent> events_;
};

} // namespace

llvm::Expected<SimResult> simulatePlan(const SimPlan &plan, bool recordEvents) {
  return Simulation(plan, recordEvents).run();
}

} // namespace strata
