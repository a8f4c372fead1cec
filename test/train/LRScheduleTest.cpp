//===- LRScheduleTest.cpp - nanoGPT's warmup + cosine schedule
//-------------===//
#include "runtime/train/LRSchedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata {
namespace {

// Values written out from the formula in docs/models.md by hand.
TEST(LRSchedule, WarmupCosineFloor) {
  LRSchedule s{/*lr=*/1e-3, /*minLr=*/1e-4, /*warmup=*/10, /*decayIters=*/110};
  EXPECT_DOUBLE_EQ(s.at(0), 1e-3 * 1 / 11);
  EXPECT_DOUBLE_EQ(s.at(9), 1e-3 * 10 / 11);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);                // r = 0
  EXPECT_NEAR(s.at(60), 1e-4 + 0.5 * 9e-4, 1e-15); // r = 1/2
  EXPECT_NEAR(s.at(110), 1e-4, 1e-15);             // r = 1
  EXPECT_DOUBLE_EQ(s.at(111), 1e-4);               // past decay
  EXPECT_DOUBLE_EQ(s.at(100000), 1e-4);
}

TEST(LRSchedule, ConstantWithoutDecay) {
  LRSchedule s{2e-3, 0, 0, 0};
  EXPECT_DOUBLE_EQ(s.at(0), 2e-3);
  EXPECT_DOUBLE_EQ(s.at(500), 2e-3);
}

} // namespace
} // namespace strata
