//===- MemoryPlanTest.cpp - Static bytes per parameter of bf16 plans ------===//
//
// Megatron-LM's report_theoretical_memory counts 18 bytes per parameter for
// bf16 / fp16 training (2 for the 16-bit weights, 4 for the fp32 main_grad,
// 4 + 4 + 4 for the fp32 master weights and Adam's moments), or
// 6 + 12/dp with the distributed optimizer. The memory plan of a compiled
// bf16 GPT must give exactly that under the Megatron model, and 16 bytes
// (4 + 4 + 8, the 16-bit copies living in the programs' workspaces) under
// strata's own.
//
//===----------------------------------------------------------------------===//
#include "frontends/ModelSpec.h"
#include "frontends/ModelStats.h"
#include "frontends/Models.h"
#include "passes/pipeline/ParallelCompile.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

struct Case {
  DType precision;
  SavedStateModel model;
  int64_t dp;
  bool distributed;
  double bytesPerParam;
};

class StaticBytes : public ::testing::TestWithParam<Case> {};

TEST_P(StaticBytes, PerParameterAsMegatronCounts) {
  const Case &c = GetParam();
  auto spec = loadModelSpec(std::string(STRATA_SOURCE_DIR) +
                            "/examples/gpt_tiny.textproto");
  ASSERT_TRUE(bool(spec)) << llvm::toString(spec.takeError());
  Graph forward = buildModelGraph(resolveModelSpec(*spec));
  int64_t params = countParams(forward).total;
  ParallelCompileOptions o;
  o.precision = c.precision;
  o.savedState = c.model;
  o.dp = c.dp;
  o.distributedOptimizer = c.distributed;
  auto plan = compilePipeline(forward, o);
  ASSERT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  ASSERT_EQ(plan->memory.ranks.size(), 1u);
  const RankMemory &m = plan->memory.ranks[0];
  // Exact: every count is a whole number of bytes per element (the tiny
  // GPT's tensors all split evenly over dp 2 and 4).
  EXPECT_DOUBLE_EQ(double(m.staticBytes()) / double(params), c.bytesPerParam)
      << "parameters " << m.parameters << ", gradients " << m.gradients
      << ", optimizer " << m.optimizerState << ", masters " << m.masterParams
      << " for " << params << " parameters";
}

INSTANTIATE_TEST_SUITE_P(
    Precision, StaticBytes,
    ::testing::Values(
        // Megatron's bf16 / fp16: 18, and 6 + 12/dp with ZeRO-1.
        Case{DType::BF16, SavedStateModel::Megatron, 1, false, 18},
        Case{DType::F16, SavedStateModel::Megatron, 1, false, 18},
        Case{DType::BF16, SavedStateModel::Megatron, 2, true, 6 + 12.0 / 2},
        Case{DType::BF16, SavedStateModel::Megatron, 4, true, 6 + 12.0 / 4},
        // strata keeps the fp32 parameter as the master: 4 + 4 + 8.
        Case{DType::BF16, SavedStateModel::Strata, 1, false, 16},
        Case{DType::BF16, SavedStateModel::Strata, 2, true, 4 + 4 + 8.0 / 2},
        // f32 training: 4 + 4 + 8 under either model.
        Case{DType::F32, SavedStateModel::Megatron, 1, false, 16}));

} // namespace
} // namespace strata
