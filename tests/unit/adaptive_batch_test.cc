#include "common/adaptive_batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace accumulus {
namespace {

AdaptiveBatchConfig Config(int64_t min, int64_t max, int64_t interval = 10) {
  AdaptiveBatchConfig c;
  c.min_global_batch = min;
  c.max_global_batch = max;
  c.interval_steps = interval;
  c.batch_per_accumulation = 16;  // micro 8 × 2 devices
  return c;
}

TEST(AdaptiveBatchRule, TheBoundsAreTheAccumulationsThatFitThem) {
  const AdaptiveBatchRule rule(Config(40, 300), 4);
  EXPECT_EQ(rule.min_accumulation(), 3);   // 48 is the first multiple of 16 ≥ 40
  EXPECT_EQ(rule.max_accumulation(), 18);  // 288 the last ≤ 300
  EXPECT_EQ(AdaptiveBatchRule(Config(40, 300), 1).accumulation(), 3);  // clamped in
}

// An average |G|² barely above zero makes the estimate enormous: the batch
// grows (to the bound, 2× at a time), never wraps around to the minimum.
TEST(AdaptiveBatchRule, AnEnormousNoiseScaleGrowsTheBatch) {
  AdaptiveBatchRule rule(Config(16, 4096), 8);
  for (const double huge : {1e18, 1e30, 1e300}) {
    const AdaptiveBatchRule::Decision d =
        rule.After(10 * (rule.state().last_change_step / 10 + 1), huge);
    EXPECT_GE(d.accumulation, 8) << huge;
    EXPECT_LE(d.accumulation, rule.max_accumulation()) << huge;
  }
  AdaptiveBatchRule fresh(Config(16, 4096), 8);
  const AdaptiveBatchRule::Decision d = fresh.After(10, 1e300);
  ASSERT_TRUE(d.changed);
  EXPECT_EQ(d.accumulation, 16);
  EXPECT_EQ(d.reason, "the noise scale is 1e+300: global batch 128 -> 256");
}

TEST(AdaptiveBatchRule, WaitsAnIntervalAndMovesAtMostTwofold) {
  AdaptiveBatchRule rule(Config(16, 4096), 2);  // global 32
  for (int64_t step = 1; step < 10; ++step) {
    EXPECT_FALSE(rule.After(step, 1000).changed) << "step " << step;
  }
  AdaptiveBatchRule::Decision d = rule.After(10, 1000);
  ASSERT_TRUE(d.changed);
  EXPECT_EQ(d.accumulation, 4);  // 2× only, though 1000 wants 62
  EXPECT_FALSE(d.reason.empty());
  EXPECT_FALSE(rule.After(19, 1000).changed);  // the next interval has not passed
  EXPECT_EQ(rule.After(20, 1000).accumulation, 8);
  // And down again, halving.
  EXPECT_EQ(rule.After(30, 20).accumulation, 4);
  EXPECT_EQ(rule.After(40, 20).accumulation, 2);
  EXPECT_EQ(rule.After(50, 20).accumulation, 1);  // the nearest to 20 is 16
  EXPECT_FALSE(rule.After(60, 20).changed);
}

TEST(AdaptiveBatchRule, HoldsWhileTheNoiseScaleStaysWithinTheBand) {
  AdaptiveBatchRule rule(Config(16, 4096, 1), 8);  // global 128
  // Within a factor √2 of 128 either way: no change, however often asked.
  for (double noise : {128.0, 100.0, 170.0, 92.0, 180.0}) {
    EXPECT_FALSE(rule.After(100, noise).changed) << noise;
  }
  EXPECT_TRUE(rule.After(100, 182).changed);  // just beyond 128 · √2
}

TEST(AdaptiveBatchRule, GoesToTheTargetWhenItIsWithinTwofold) {
  AdaptiveBatchRule rule(Config(16, 4096, 1), 8);
  const AdaptiveBatchRule::Decision d = rule.After(5, 16 * 11.6);
  ASSERT_TRUE(d.changed);
  EXPECT_EQ(d.accumulation, 12);  // round(11.6), not 16
}

TEST(AdaptiveBatchRule, StaysWithinTheBounds) {
  AdaptiveBatchRule rule(Config(32, 64, 1), 2);
  EXPECT_EQ(rule.After(1, 1e6).accumulation, 4);  // max 64 / 16
  EXPECT_FALSE(rule.After(2, 1e6).changed);
  EXPECT_EQ(rule.After(3, 1).accumulation, 2);  // min 32 / 16
  EXPECT_FALSE(rule.After(4, 1).changed);
}

TEST(AdaptiveBatchRule, NoEstimateChangesNothing) {
  AdaptiveBatchRule rule(Config(16, 4096, 1), 4);
  EXPECT_FALSE(rule.After(50, 0).changed);
  EXPECT_FALSE(rule.After(51, std::nan("")).changed);
  EXPECT_EQ(rule.accumulation(), 4);
}

TEST(AdaptiveBatchRule, DecisionsDependOnlyOnTheNoiseScalesSeen) {
  const std::vector<double> noise{50, 400, 900, 3000, 3000, 800, 100, 2500};
  AdaptiveBatchRule whole(Config(16, 4096, 3), 2);
  std::vector<int64_t> trace;
  AdaptiveBatchRule first(Config(16, 4096, 3), 2);
  AdaptiveBatchRule resumed(Config(16, 4096, 3), 2);
  for (size_t i = 0; i < 40; ++i) {
    const int64_t step = static_cast<int64_t>(i) + 1;
    const double b = noise[i % noise.size()];
    trace.push_back(whole.After(step, b).accumulation);
    if (i < 17) {
      first.After(step, b);
      if (i == 16) resumed.Restore(first.state());
    } else {
      EXPECT_EQ(resumed.After(step, b).accumulation, trace.back()) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace accumulus
