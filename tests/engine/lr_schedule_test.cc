#include "worker/engine/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace accumulus::engine {
namespace {

TEST(LearningRate, WarmupIsLinearInOptimizerSteps) {
  LrScheduleConfig c;
  c.warmup_steps = 4;
  for (int64_t t = 0; t < 4; ++t) EXPECT_DOUBLE_EQ(LearningRate(c, 0.8, t, 100), 0.2 * (t + 1));
  EXPECT_DOUBLE_EQ(LearningRate(c, 0.8, 50, 100), 0.8);
}

TEST(LearningRate, CosineMatchesTheClosedForm) {
  LrScheduleConfig c;
  c.kind = LrScheduleKind::kCosine;
  c.warmup_steps = 10;
  c.min_lr_ratio = 0.1;
  const int64_t total = 110;
  for (int64_t t = 10; t < total; ++t) {
    const double progress = static_cast<double>(t - 10) / (total - 1 - 10);
    const double expected = 0.01 + (0.1 - 0.01) * 0.5 * (1 + std::cos(M_PI * progress));
    EXPECT_NEAR(LearningRate(c, 0.1, t, total), expected, 1e-15) << "step " << t;
  }
  EXPECT_NEAR(LearningRate(c, 0.1, total - 1, total), 0.01, 1e-15);
}

TEST(LearningRate, LinearDecayEndsAtTheFloor) {
  LrScheduleConfig c;
  c.kind = LrScheduleKind::kLinear;
  EXPECT_DOUBLE_EQ(LearningRate(c, 1.0, 0, 11), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(c, 1.0, 5, 11), 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(c, 1.0, 10, 11), 0.0);
}

TEST(LinearlyScaledLr, ScalesByTheBatchRatio) {
  EXPECT_DOUBLE_EQ(LinearlyScaledLr(0.1, 1024, 256), 0.4);
}

}  // namespace
}  // namespace accumulus::engine
