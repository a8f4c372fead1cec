//===- PlanFileTest.cpp - Plan file framing: round trip and bad files -----===//
#include "TestSpecs.h"

#include "proto/GraphProto.h"
#include "proto/PlanFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace strata;
using namespace strata::test;

namespace {

pb::Plan tinyPlan() {
  pb::Plan plan;
  plan.set_format_version(kPlanFormatVersion);
  plan.set_strata_version(kStrataVersion);
  *plan.mutable_model() = specFromText(kTinyGPT);
  *plan.mutable_logical_graph() = graphToProto(buildFromText(kTinyGPT));
  return plan;
}

std::string errorOf(llvm::StringRef bytes) {
  auto plan = parsePlan(bytes, "p.plan");
  if (plan)
    return "<no error>";
  return toString(plan.takeError());
}

TEST(PlanFile, RoundTripsInMemory) {
  pb::Plan plan = tinyPlan();
  auto back = parsePlan(serializePlan(plan), "p.plan");
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_EQ(back->SerializeAsString(), plan.SerializeAsString());
}

TEST(PlanFile, EveryTruncationIsAnError) {
  std::string bytes = serializePlan(tinyPlan());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string err = errorOf(llvm::StringRef(bytes).take_front(n));
    llvm::StringRef want = n < 8 ? "p.plan: error: not a strata plan"
                                 : "p.plan: error: truncated plan";
    ASSERT_TRUE(llvm::StringRef(err).startswith(want)) << n << ": " << err;
  }
}

TEST(PlanFile, DetectsCorruption) {
  std::string bytes = serializePlan(tinyPlan());
  bytes[bytes.size() / 2] ^= 0x20;
  EXPECT_EQ(errorOf(bytes), "p.plan: error: corrupt plan (checksum mismatch; "
                            "recompile it with `strata compile`)");
  EXPECT_EQ(errorOf(serializePlan(tinyPlan()) + "x"),
            "p.plan: error: corrupt plan (header says " +
                std::to_string(bytes.size() - kPlanHeaderSize) +
                " payload bytes, file has " +
                std::to_string(bytes.size() - kPlanHeaderSize + 1) +
                "; recompile it with `strata compile`)");
}

TEST(PlanFile, RefusesNewerAndOlderFormats) {
  static_assert(kPlanFormatVersion == 2, "update the messages below");
  pb::Plan plan = tinyPlan();
  plan.set_format_version(kPlanFormatVersion + 1);
  EXPECT_EQ(errorOf(serializePlan(plan)),
            "p.plan: error: plan format version 3 is newer than this strata "
            "reads (2; use a newer strata or recompile the plan)");
  plan.set_format_version(kPlanFormatVersion - 1);
  EXPECT_EQ(errorOf(serializePlan(plan)),
            "p.plan: error: plan format version 1 is older than this strata "
            "reads (2: its buffer plans lack reshape views; recompile it with "
            "`strata compile`)");
}

TEST(PlanFile, RejectsGarbage) {
  EXPECT_EQ(errorOf("family: GPT\nhidden: 64\n"),
            "p.plan: error: not a strata plan (no STRATAPL header; plans are "
            "written by `strata compile`, model specs end in .textproto)");
}

TEST(PlanFile, WritesAtomicallyAndReadsBack) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("plantest", dir));
  std::string path = (dir + "/run.plan").str();
  ASSERT_FALSE(bool(writePlanFile(path, tinyPlan())));
  auto back = readPlanFile(path);
  ASSERT_TRUE(bool(back)) << toString(back.takeError());
  EXPECT_EQ(back->model().hidden(), 32);

  // Only the plan is left: no temporary files.
  std::error_code ec;
  int entries = 0;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    ++entries;
  EXPECT_EQ(entries, 1);

  llvm::Error e = writePlanFile((dir + "/missing/run.plan").str(), tinyPlan());
  EXPECT_TRUE(bool(e));
  llvm::consumeError(std::move(e));
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
