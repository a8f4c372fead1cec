//===- ScheduleTest.cpp - GPipe, 1F1B and interleaved 1F1B schedules
//-------===//
#include "passes/pipeline/Schedule.h"

#include <gtest/gtest.h>

using namespace strata;

namespace {

std::string stream(const Schedule &s, int64_t r) {
  std::string out;
  for (const Instr &i : s.ranks[r])
    out += (out.empty() ? "" : " ") + i.str();
  return out;
}

Schedule build(ScheduleKind kind, int64_t V, int64_t P, int64_t M) {
  auto s = buildSchedule({kind, V}, P, M);
  EXPECT_TRUE(bool(s)) << toString(s.takeError());
  return std::move(*s);
}

double simulatedBubble(const Schedule &s) {
  return simulate(s,
                  [&](int64_t, const Instr &i) { return unitDuration(s, i); })
      .bubbleFraction();
}

std::string errorOf(llvm::Error e) { return toString(std::move(e)); }

TEST(Schedule, GPipeRunsAllForwardsThenAllBackwards) {
  Schedule s = build(ScheduleKind::GPipe, 1, 2, 3);
  EXPECT_EQ(stream(s, 0), "F0 F1 F2 B0 B1 B2 OPT");
  EXPECT_EQ(stream(s, 1), "F0 F1 F2 B0 B1 B2 OPT");
  EXPECT_EQ(maxInFlight(s), (std::vector<std::vector<int64_t>>{{3}, {3}}));
}

TEST(Schedule, OneFOneBWarmsUpThenAlternates) {
  Schedule s = build(ScheduleKind::OneFOneB, 1, 4, 6);
  EXPECT_EQ(stream(s, 0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 OPT");
  EXPECT_EQ(stream(s, 1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5 OPT");
  EXPECT_EQ(stream(s, 2), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 OPT");
  EXPECT_EQ(stream(s, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 OPT");
}

TEST(Schedule, InterleavedFollowsMegatron) {
  // Megatron-LM's forward_backward_pipelining_with_interleaving, pp=2, V=2,
  // M=4: rank 0 warms up with (P-r-1)*2 + (V-1)*P = 4 forwards.
  Schedule s = build(ScheduleKind::Interleaved, 2, 2, 4);
  EXPECT_EQ(stream(s, 0),
            "F0 F1 F0.c1 F1.c1 F2 B0.c1 F3 B1.c1 F2.c1 B0 F3.c1 B1 B2.c1 "
            "B3.c1 B2 B3 OPT");
  EXPECT_EQ(stream(s, 1),
            "F0 F1 F0.c1 B0.c1 F1.c1 B1.c1 F2 B0 F3 B1 F2.c1 B2.c1 F3.c1 "
            "B3.c1 B2 B3 OPT");
  EXPECT_EQ(s.stageOf(1, 1), 3);
}

TEST(Schedule, InFlightUnderOneFOneBIsPMinusRank) {
  for (int64_t P : {1, 2, 3, 4, 8})
    for (int64_t M : {1, 2, 3, 4, 7, 8, 16}) {
      Schedule s = build(ScheduleKind::OneFOneB, 1, P, M);
      auto inFlight = maxInFlight(s);
      for (int64_t r = 0; r < P; ++r)
        EXPECT_EQ(inFlight[r][0], std::min(P - r, M))
            << "P=" << P << " M=" << M << " rank " << r;
      Schedule g = build(ScheduleKind::GPipe, 1, P, M);
      for (int64_t r = 0; r < P; ++r)
        EXPECT_EQ(maxInFlight(g)[r][0], M);
    }
}

TEST(Schedule, InterleavedKeepsMoreInFlightOnEarlyRanks) {
  Schedule s = build(ScheduleKind::Interleaved, 2, 4, 8);
  auto inFlight = maxInFlight(s);
  // Rank r warms up with (P-r-1)*2 + (V-1)*P forwards over both chunks.
  for (int64_t r = 0; r < 4; ++r) {
    int64_t held = 0, most = 0;
    for (const Instr &i : s.ranks[r]) {
      if (i.kind == Instr::Forward)
        most = std::max(most, ++held);
      if (i.kind == Instr::Backward)
        --held;
    }
    EXPECT_EQ(most, (4 - r - 1) * 2 + 4 + 1) << "rank " << r;
    for (int64_t c = 0; c < 2; ++c)
      EXPECT_LE(inFlight[r][c], most);
  }
  EXPECT_GT(inFlight[0][0], inFlight[3][0]);
}

TEST(Schedule, SimulatedBubbleMatchesThePapers) {
  for (int64_t P : {2, 3, 4, 8})
    for (int64_t M : {P, 2 * P, 3 * P + 1, 8 * P}) {
      for (ScheduleKind k : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        Schedule s = build(k, 1, P, M);
        EXPECT_DOUBLE_EQ(idealBubbleFraction(s), double(P - 1) / double(M));
        EXPECT_NEAR(simulatedBubble(s), idealBubbleFraction(s), 1e-12)
            << s.spec.str() << " P=" << P << " M=" << M;
      }
    }
  for (int64_t P : {2, 4})
    for (int64_t V : {2, 3, 4})
      for (int64_t M : {P, 2 * P, 4 * P}) {
        Schedule s = build(ScheduleKind::Interleaved, V, P, M);
        EXPECT_DOUBLE_EQ(idealBubbleFraction(s), double(P - 1) / double(V * M));
        EXPECT_NEAR(simulatedBubble(s), idealBubbleFraction(s), 1e-12)
            << s.spec.str() << " P=" << P << " M=" << M;
      }
}

TEST(Schedule, TimelineOrdersEveryMessage) {
  Schedule s = build(ScheduleKind::Interleaved, 2, 4, 8);
  Timeline t =
      simulate(s, [&](int64_t, const Instr &i) { return unitDuration(s, i); });
  // end[(kind, microbatch, stage)]: F of stage j ends before F of j+1
  // starts, B of j+1 before B of j.
  std::map<std::tuple<int, int, int64_t>, std::pair<double, double>> when;
  for (int64_t r = 0; r < 4; ++r)
    for (const Timeline::Slot &slot : t.ranks[r])
      if (slot.instr.kind != Instr::Optimizer)
        when[{slot.instr.kind, slot.instr.microbatch,
              s.stageOf(r, slot.instr.chunk)}] = {slot.start, slot.end};
  for (const auto &[key, span] : when) {
    auto [kind, k, j] = key;
    auto next = when.find({kind, k, kind == Instr::Forward ? j + 1 : j - 1});
    if (next != when.end()) {
      EXPECT_LE(span.second, next->second.first);
    }
  }
}

TEST(Schedule, ErrorsSayWhatWouldFit) {
  EXPECT_EQ(
      errorOf(buildSchedule({ScheduleKind::Interleaved, 2}, 4, 6).takeError()),
      "interleaved:2 runs microbatches in groups of pp=4, so "
      "microbatches must be a multiple of 4 (got 6; use 4 or 8, or the "
      "1f1b schedule)");
  EXPECT_EQ(
      errorOf(buildSchedule({ScheduleKind::Interleaved, 2}, 4, 3).takeError()),
      "interleaved:2 runs microbatches in groups of pp=4, so "
      "microbatches must be a multiple of 4 (got 3; use 4, or the 1f1b "
      "schedule)");
  EXPECT_EQ(
      errorOf(buildSchedule({ScheduleKind::Interleaved, 2}, 1, 4).takeError()),
      "interleaved:2 interleaves the chunks of several pipeline ranks; "
      "with pp=1 use 1f1b");
  EXPECT_EQ(
      errorOf(buildSchedule({ScheduleKind::Interleaved, 1}, 2, 4).takeError()),
      "interleaved:1 needs at least 2 chunks per rank (interleaved:1 "
      "is 1f1b)");
  EXPECT_EQ(
      errorOf(buildSchedule({ScheduleKind::OneFOneB, 1}, 2, 0).takeError()),
      "pipeline schedules need pp >= 1 and microbatches >= 1 (got "
      "pp=2, microbatches=0)");
  EXPECT_EQ(errorOf(parseScheduleSpec("zigzag").takeError()),
            "unknown schedule 'zigzag' (use gpipe, 1f1b or interleaved:V "
            "with V model chunks per pipeline rank)");
  for (const char *text : {"gpipe", "1f1b", "interleaved:3"}) {
    auto spec = parseScheduleSpec(text);
    ASSERT_TRUE(bool(spec));
    EXPECT_EQ(spec->str(), text);
  }
}

TEST(Schedule, ValidationRejectsBrokenStreams) {
  Schedule s = build(ScheduleKind::OneFOneB, 1, 2, 2);
  Schedule missing = s;
  missing.ranks[1].erase(missing.ranks[1].begin() + 1); // B0
  EXPECT_EQ(errorOf(validateSchedule(missing)), "rank 1 never runs B0");
  Schedule early = s;
  std::swap(early.ranks[1][0], early.ranks[1][1]);
  EXPECT_EQ(errorOf(validateSchedule(early)),
            "rank 1: B0 runs before its forward");
  Schedule optFirst = s;
  std::rotate(optFirst.ranks[0].rbegin(), optFirst.ranks[0].rbegin() + 1,
              optFirst.ranks[0].rend());
  EXPECT_EQ(errorOf(validateSchedule(optFirst)),
            "rank 0: OPT is not the last instruction");
  // Rank 1 runs microbatch 1 first, rank 0 microbatch 0 through its B
  // first: each waits for the other.
  Schedule cycle = s;
  cycle.ranks[0] = {{Instr::Forward, 0, 0},
                    {Instr::Backward, 0, 0},
                    {Instr::Forward, 1, 0},
                    {Instr::Backward, 1, 0},
                    {Instr::Optimizer, -1, 0}};
  cycle.ranks[1] = {{Instr::Forward, 1, 0},
                    {Instr::Backward, 1, 0},
                    {Instr::Forward, 0, 0},
                    {Instr::Backward, 0, 0},
                    {Instr::Optimizer, -1, 0}};
  EXPECT_EQ(errorOf(validateSchedule(cycle)),
            "the schedule deadlocks: rank 0 waits in B0, rank 1 waits in F1");
}

} // namespace
