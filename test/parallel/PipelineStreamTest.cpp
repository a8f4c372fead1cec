//===- PipelineStreamTest.cpp - Pipeline send/recv off the compute stream -===//
//
// On CUDA (and interpret mode) a pipeline send is staged on the compute
// stream and then runs on its pp communicator's own NCCL stream, one per
// direction (runtime/cuda/nccl/NcclGroups.h), until the peer posts the
// matching recv; the compute stream goes on with the next program.
//  - --trace waits for each program, on the compute stream only: a 1F1B
//    schedule over 4 microbatches on pp 2 used to wait for the sends too
//    and deadlock (rank 0 waited for its second activation's send, which
//    rank 1 receives only after its first backward, whose gradient send
//    waited for rank 0), until the communicators' timeout (here 60 s, the
//    test's device timeout: a regression fails instead of hanging).
//  - the trace shows a send in flight while its rank runs a later program.
//  - the traced run's losses and state equal the untraced run's bitwise:
//    the trace changes when the host waits, not what runs.
// CPU devices post sends from the compute stream's thread to Gloo, which
// sends asynchronously; the same traced 1F1B run is checked there.
//
//===----------------------------------------------------------------------===//
#include "runtime/Trace.h"
#include "runtime/cuda/CudaDevice.h"
#include "test/parallel/BitwiseRuns.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

test::TrainRun train(Backend backend, Trace *trace) {
  ParallelConfig c;
  c.pp = 2;
  c.schedule.kind = ScheduleKind::OneFOneB;
  DeviceGroupOptions d = test::quickDevices();
  d.backend = backend;
  return test::trainThreeSteps(test::tinyGpt(0, 2), c, d, test::tinyTraining(4),
                               trace);
}

struct Span {
  int64_t begin, end;
};

/// Rank `rank`'s program spans and send spans, from `trace`.
void spans(const Trace &trace, int64_t rank, std::vector<Span> &programs,
           std::vector<Span> &sends) {
  llvm::json::Value v = trace.toJson();
  for (const llvm::json::Value &e : *v.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object &o = *e.getAsObject();
    if (o.getInteger("pid").getValueOr(-1) != rank ||
        o.getString("ph").getValueOr("") != "X")
      continue;
    int64_t ts = *o.getInteger("ts"), dur = *o.getInteger("dur");
    llvm::StringRef cat = o.getString("cat").getValueOr(""),
                    name = o.getString("name").getValueOr("");
    if (cat == "program" && !name.startswith("optimizer"))
      programs.push_back({ts, ts + dur});
    else if (cat == "collective" && name.startswith("send"))
      sends.push_back({ts, ts + dur});
  }
  llvm::sort(programs, [](Span a, Span b) { return a.begin < b.begin; });
}

class TracedOneFOneB : public testing::TestWithParam<Backend> {};

TEST_P(TracedOneFOneB, RunsAndEqualsTheUntracedRunBitwise) {
  Trace trace;
  test::TrainRun traced = train(GetParam(), &trace);
  ASSERT_EQ(traced.losses.size(), 3u);
  EXPECT_NE(traced.losses.front(), traced.losses.back());
  test::expectBitwiseEqual(traced, train(GetParam(), nullptr));
}

INSTANTIATE_TEST_SUITE_P(PipelineStream, TracedOneFOneB,
                         testing::Values(Backend::Cpu, Backend::CudaInterpret),
                         [](const testing::TestParamInfo<Backend> &i) {
                           return i.param == Backend::Cpu ? "cpu"
                                                          : "cuda_interpret";
                         });

// Sends on their own stream vs the compute stream waiting for each send:
// GPipe (all forwards, then all backwards) runs either way (1F1B would
// deadlock with waiting sends), pp 2 over 4 microbatches on interpret-mode
// CUDA; the losses and the whole state are bitwise equal (a send reads
// the same bytes either way: eager sends a staging copy made on the
// compute stream).
TEST(PipelineStream, SendsOffTheComputeStreamAreBitwiseJoinedOnes) {
  auto run = [](bool join) {
    ParallelConfig c;
    c.pp = 2;
    c.schedule.kind = ScheduleKind::GPipe;
    DeviceGroupOptions d = test::quickDevices();
    d.backend = Backend::CudaInterpret;
    return test::trainThreeSteps(
        test::tinyGpt(0, 2), c, d, test::tinyTraining(4), nullptr,
        [join](DeviceGroup &g) {
          for (size_t l = 0; l < g.numLocal(); ++l)
            dynamic_cast<CudaDevice &>(g.device(l)).setSendsJoinCompute(join);
        });
  };
  test::TrainRun eager = run(false);
  ASSERT_EQ(eager.losses.size(), 3u);
  EXPECT_NE(eager.losses.front(), eager.losses.back());
  test::expectBitwiseEqual(eager, run(true));
}

// A stage computes while it sends: some send of a rank ends after a program
// that the rank started after the program issuing the send had ended. In
// 1F1B one always exists: either rank 0's second activation waits for rank
// 1's first backward to end (rank 0 is in its first backward meanwhile),
// or rank 1's first gradient waits for rank 0 to finish its second forward
// (rank 1 is in its second forward meanwhile). The issuing program is taken
// as the last one started before the send did (a later one if the send's
// stream was slow to reach it, which only makes the check stricter).
TEST(PipelineStream, ASendOverlapsALaterProgramOfItsRank) {
  Trace trace;
  ASSERT_EQ(train(Backend::CudaInterpret, &trace).losses.size(), 3u);
  int64_t overlapping = 0, total = 0;
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::vector<Span> programs, sends;
    spans(trace, rank, programs, sends);
    ASSERT_FALSE(programs.empty());
    ASSERT_FALSE(sends.empty()) << "rank " << rank;
    total += int64_t(sends.size());
    for (Span s : sends) {
      const Span *issuer = nullptr;
      for (const Span &p : programs)
        if (p.begin <= s.begin)
          issuer = &p;
      if (!issuer)
        continue;
      for (const Span &p : programs)
        if (p.begin >= issuer->end && p.begin < s.end) {
          ++overlapping;
          break;
        }
    }
  }
  EXPECT_GT(overlapping, 0) << "of " << total << " sends";
}

} // namespace
} // namespace strata
