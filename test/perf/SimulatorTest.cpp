//===- SimulatorTest.cpp - The event-driven simulator on hand-computable plans
//
// Pipelines whose stage programs are one span of work between a recv and a
// send: the bubble of 1F1B is the textbook (p-1)/m and of the interleaved
// schedule (p-1)/(v*m) (Narayanan et al. 2021, sec. 2.2), an unbalanced cut
// makes the heaviest rank the step, a transfer delays its receiver, the
// optimizer's pp collective waits for the last rank, work on the second
// stream overlaps until the optimizer joins it, and gathers issued by the
// first forward are waited for by their first reader only.
//
//===----------------------------------------------------------------------===//
#include "perf/Simulator.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace strata {
namespace {

SimOp work(double s, Phase phase = Phase::Compute) {
  SimOp op;
  op.seconds = s;
  op.phase = phase;
  return op;
}
SimOp message(SimOp::Kind kind, int64_t peer, int64_t tag, double s = 0) {
  SimOp op;
  op.kind = kind;
  op.peer = peer;
  op.tag = tag;
  op.seconds = s;
  return op;
}

/// A pipeline of S = P*V stages: F of stage j receives from j-1 and sends
/// to j+1 (tag j), B the other way (tag 1000 + j); stage j's F takes
/// fwd[j], its B bwd[j]; messages take `transfer`.
SimPlan chain(ScheduleSpec spec, int64_t p, int64_t m,
              const std::vector<double> &fwd, const std::vector<double> &bwd,
              double transfer = 0) {
  SimPlan plan;
  auto s = buildSchedule(spec, p, m);
  EXPECT_TRUE(bool(s)) << llvm::toString(s.takeError());
  plan.schedule = *s;
  int64_t stages = plan.schedule.numStages();
  for (int64_t j = 0; j < stages; ++j) {
    SimProgram f, b;
    if (j > 0)
      f.ops.push_back(message(SimOp::Recv, (j - 1) % p, j - 1));
    f.ops.push_back(work(fwd[j]));
    if (j + 1 < stages)
      f.ops.push_back(message(SimOp::Send, (j + 1) % p, j, transfer));
    if (j + 1 < stages)
      b.ops.push_back(message(SimOp::Recv, (j + 1) % p, 1000 + j + 1));
    b.ops.push_back(work(bwd[j]));
    if (j > 0)
      b.ops.push_back(message(SimOp::Send, (j - 1) % p, 1000 + j, transfer));
    plan.forward.push_back(f);
    plan.backward.push_back(b);
  }
  plan.optimizer.resize(p);
  return plan;
}

TEST(SimulatorTest, OneFOneBBubbleIsTextbook) {
  // F = 1, B = 2 per stage: every rank idles (p-1)(F+B) of a busy m(F+B).
  for (int64_t p : {2, 4, 8})
    for (int64_t m : {1, 4, 8, 16}) {
      SimPlan plan =
          chain({ScheduleKind::OneFOneB, 1}, p, m, std::vector<double>(p, 1.0),
                std::vector<double>(p, 2.0));
      auto r = simulatePlan(plan, false);
      ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
      // Exact in binary floating point: sums of small integers.
      EXPECT_DOUBLE_EQ(r->bubbleFraction(), double(p - 1) / double(m))
          << "p=" << p << " m=" << m;
      EXPECT_DOUBLE_EQ(r->stepTime, double(m + p - 1) * 3.0);
      for (const RankTime &rank : r->ranks)
        EXPECT_DOUBLE_EQ(rank.phase[size_t(Phase::Idle)], double(p - 1) * 3.0);
    }
}

TEST(SimulatorTest, InterleavedBubbleIsTextbook) {
  // Each of a rank's v chunks takes 1/v of its F and B.
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 3})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        std::vector<double> f(p * v, 1.0 / double(v)),
            b(p * v, 2.0 / double(v));
        SimPlan plan = chain({ScheduleKind::Interleaved, v}, p, m, f, b);
        auto r = simulatePlan(plan, false);
        ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
        // 1/v is not exact in binary: sums of m*v of them round.
        EXPECT_NEAR(r->bubbleFraction(), double(p - 1) / double(v * m), 1e-12)
            << "p=" << p << " v=" << v << " m=" << m;
      }
}

TEST(SimulatorTest, UnbalancedCutShowsInStepTime) {
  // Two stages, 4 microbatches, the same total work cut 2+2 or 3+1 (F; B
  // twice F). Balanced: (m + p - 1)(F + B) = 5 * 6 = 30. Unbalanced: rank 0
  // (F 3, B 6) never idles: F0 [0,3] F1 [3,6]; rank 1's F0 [3,4] B0 [4,6]
  // hands B0 back at 6, and each later B arrives before rank 0 wants it, so
  // the step is rank 0's busy time 4 * 9 = 36, while rank 1 (busy 4 * 3)
  // idles 24.
  auto balanced = simulatePlan(
      chain({ScheduleKind::OneFOneB, 1}, 2, 4, {2, 2}, {4, 4}), false);
  auto unbalanced = simulatePlan(
      chain({ScheduleKind::OneFOneB, 1}, 2, 4, {3, 1}, {6, 2}), false);
  ASSERT_TRUE(bool(balanced) && bool(unbalanced));
  EXPECT_DOUBLE_EQ(balanced->stepTime, 30);
  EXPECT_DOUBLE_EQ(unbalanced->stepTime, 36);
  EXPECT_DOUBLE_EQ(unbalanced->ranks[0].phase[size_t(Phase::Idle)], 0);
  EXPECT_DOUBLE_EQ(unbalanced->ranks[1].phase[size_t(Phase::Idle)], 24);
}

TEST(SimulatorTest, TransfersDelayTheReceiver) {
  // One microbatch over two stages: F0, message, F1, B1, message, B0.
  auto r = simulatePlan(
      chain({ScheduleKind::OneFOneB, 1}, 2, 1, {1, 1}, {2, 2}, 0.25), false);
  ASSERT_TRUE(bool(r));
  EXPECT_DOUBLE_EQ(r->stepTime, 1 + 0.25 + 1 + 2 + 0.25 + 2);
  // Rank 1 waits 1.25 for F0's message (0.25 of it the transfer), runs
  // F1 and B1 to 4.25 and idles to the end at 6.5; rank 0 waits from 1 to
  // 4.5 for B1's message (0.25 the transfer).
  EXPECT_DOUBLE_EQ(r->ranks[1].phase[size_t(Phase::CommPp)], 0.25);
  EXPECT_DOUBLE_EQ(r->ranks[0].phase[size_t(Phase::CommPp)], 0.25);
  EXPECT_DOUBLE_EQ(r->ranks[0].phase[size_t(Phase::Idle)], 3.25);
  EXPECT_DOUBLE_EQ(r->ranks[1].phase[size_t(Phase::Idle)], 1.0 + 2.25);
}

TEST(SimulatorTest, PipelineCollectiveWaitsForTheLastRank) {
  // Each optimizer runs its own work, then the pp all_reduce (0.125) once
  // both ranks reached it, then more of its own.
  SimPlan plan = chain({ScheduleKind::OneFOneB, 1}, 2, 1, {1, 1}, {2, 2});
  SimOp barrier = work(0.125, Phase::CommPp);
  barrier.kind = SimOp::Barrier;
  plan.optimizer[0].ops = {work(0.5, Phase::Optimizer), barrier,
                           work(1, Phase::Optimizer)};
  plan.optimizer[1].ops = {work(2, Phase::Optimizer), barrier,
                           work(1, Phase::Optimizer)};
  auto r = simulatePlan(plan, true);
  ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
  // Pipeline: F0 [0,1], F1 [1,2], B1 [2,4], B0 [4,6]; rank 1 ends at 4.
  // Rank 0 reaches the barrier at 6.5, rank 1 at 6: start 6.5.
  EXPECT_DOUBLE_EQ(r->stepTime, 6.5 + 0.125 + 1);
  for (const RankTime &rank : r->ranks) {
    double sum = 0;
    for (double t : rank.phase)
      sum += t;
    EXPECT_DOUBLE_EQ(sum, r->stepTime);
  }
  EXPECT_DOUBLE_EQ(r->ranks[1].phase[size_t(Phase::Optimizer)], 3);
}

TEST(SimulatorTest, AsyncWorkOverlapsAndTheJoinExposesTheRest) {
  // One rank, 3 microbatches: F = 1; B = 2, then a reduction issued on the
  // second stream (only in the last B), then 1; the optimizer waits for the
  // stream, then works 1. F0 [0,1] B0 [1,4] F1 [4,5] B1 [5,8] F2 [8,9];
  // B2's reduction starts at 11: it ends at 11 + r, B2 at 12.
  for (double reduce : {5.0, 0.5}) {
    SimPlan plan = chain({ScheduleKind::OneFOneB, 1}, 1, 3, {1}, {2});
    SimOp async = work(reduce, Phase::CommDp);
    async.kind = SimOp::Async;
    plan.backward[0].ops.push_back(async);
    plan.backward[0].ops.push_back(work(1));
    SimOp join = work(0, Phase::CommDp);
    join.kind = SimOp::Join;
    plan.optimizer[0].ops = {join, work(1, Phase::Optimizer)};
    auto r = simulatePlan(plan, true);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    double exposed = std::max(0.0, 11 + reduce - 12);
    EXPECT_DOUBLE_EQ(r->ranks[0].phase[size_t(Phase::CommDp)], exposed);
    EXPECT_DOUBLE_EQ(r->stepTime, 12 + exposed + 1);
  }
}

TEST(SimulatorTest, GathersOverlapTheFirstForwardUpToTheirReader) {
  // One rank, 2 microbatches (F = 3 of which 1 before the reader of gather
  // bucket 1; B = 2). The first F issues two gathers of g0 and g1 seconds
  // on the second stream at 0 and waits for bucket 0 at its start and for
  // bucket 1 after 1 second of work: g0 is exposed, then bucket 1 ends at
  // g0 + g1 and its wait exposes max(0, g0 + g1 - (g0 + 1)). The second F
  // neither issues nor waits.
  for (double g1 : {0.5, 4.0}) {
    const double g0 = 0.25;
    SimPlan plan = chain({ScheduleKind::OneFOneB, 1}, 1, 2, {0}, {2});
    SimOp a0 = work(g0, Phase::CommDp), a1 = work(g1, Phase::CommDp);
    a0.kind = a1.kind = SimOp::Async;
    SimOp w0 = work(0, Phase::CommDp), w1 = w0;
    w0.kind = w1.kind = SimOp::Join;
    w0.tag = 0, w1.tag = 1;
    plan.forward[0].ops = {a0, a1, w0, work(1), w1, work(2)};
    auto r = simulatePlan(plan, true);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    double exposed = g0 + std::max(0.0, g1 - 1);
    EXPECT_DOUBLE_EQ(r->ranks[0].phase[size_t(Phase::CommDp)], exposed);
    EXPECT_DOUBLE_EQ(r->stepTime, exposed + 2 * 3 + 2 * 2);
  }
}

TEST(SimulatorTest, MissingSendIsADeadlock) {
  SimPlan plan = chain({ScheduleKind::OneFOneB, 1}, 2, 2, {1, 1}, {2, 2});
  plan.forward[0].ops.pop_back(); // F of stage 0 no longer sends
  auto r = simulatePlan(plan, false);
  ASSERT_FALSE(bool(r));
  std::string msg = llvm::toString(r.takeError());
  EXPECT_NE(msg.find("deadlock (rank 0 at B0 op 0, rank 1 at F0 op 0)"),
            std::string::npos)
      << msg;
}

} // namespace
} // namespace strata
