#include "common/noise_scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace accumulus {
namespace {

// The squared norm a batch of B would have in expectation: |G|² + tr(Σ)/B.
NoiseSample Expected(double g2, double trace, double small, double big) {
  return {small, g2 + trace / small, big, g2 + trace / big};
}

TEST(EstimateNoise, RecoversBothTermsFromExactExpectations) {
  const NoiseEstimate e = EstimateNoise(Expected(2.5, 300, 8, 64));
  EXPECT_NEAR(e.gradient_sq_norm, 2.5, 1e-12);
  EXPECT_NEAR(e.noise_trace, 300, 1e-9);
}

TEST(NoiseScaleEstimator, ConstantSamplesGiveTheirValuesFromTheFirstWindowOn) {
  NoiseScaleEstimator estimator(0.9);
  EXPECT_EQ(estimator.noise_scale(), 0);  // nothing measured yet
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(estimator.Add(Expected(4, 200, 16, 128)));
    // Bias-corrected: no pull towards the averages' zero start.
    EXPECT_NEAR(estimator.gradient_sq_norm(), 4, 1e-9) << "window " << i;
    EXPECT_NEAR(estimator.noise_trace(), 200, 1e-7) << "window " << i;
    EXPECT_NEAR(estimator.noise_scale(), 50, 1e-8) << "window " << i;
  }
  EXPECT_EQ(estimator.windows(), 5);
}

TEST(NoiseScaleEstimator, SmoothsEachTermBeforeTheRatio) {
  // Two windows whose |G|² estimates are 1 and 3 with tr(Σ) 10 and 10: the
  // ratio of the averages is 10/2, not the average of the ratios (10 and
  // 3.33).
  NoiseScaleEstimator estimator(0.5);
  ASSERT_TRUE(estimator.Add(Expected(1, 10, 2, 4)));
  ASSERT_TRUE(estimator.Add(Expected(3, 10, 2, 4)));
  // Averages with decay 0.5, corrected by 1 - 0.25: |G|² (0.25 + 1.5) / 0.75.
  const double g2 = (0.5 * 0.5 * 1 + 0.5 * 3) / 0.75;
  EXPECT_NEAR(estimator.gradient_sq_norm(), g2, 1e-12);
  EXPECT_NEAR(estimator.noise_scale(), 10 / g2, 1e-12);
}

TEST(NoiseScaleEstimator, IgnoresWindowsItCannotUse) {
  NoiseScaleEstimator estimator;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(estimator.Add({8, 1.0, 8, 0.5}));   // no second batch size
  EXPECT_FALSE(estimator.Add({16, 1.0, 8, 0.5}));  // small above big
  EXPECT_FALSE(estimator.Add({0, 1.0, 8, 0.5}));
  EXPECT_FALSE(estimator.Add({8, inf, 64, 0.5}));  // an overflowed window
  EXPECT_FALSE(estimator.Add({8, 1.0, 64, std::nan("")}));
  EXPECT_EQ(estimator.windows(), 0);
  EXPECT_EQ(estimator.noise_scale(), 0);
}

TEST(NoiseScaleEstimator, SaysNothingWhileTheGradientLooksLikePureNoise) {
  // An estimate of |G|² below zero (the gradient's signal buried in noise at
  // these batch sizes) gives no noise scale rather than a negative one.
  NoiseScaleEstimator estimator;
  ASSERT_TRUE(estimator.Add({8, 1.0, 64, 0.2}));  // |G|² ≈ (64·0.2 − 8)/56 > 0
  EXPECT_GT(estimator.noise_scale(), 0);
  NoiseScaleEstimator noisy;
  ASSERT_TRUE(noisy.Add({8, 1.0, 64, 0.1}));  // (6.4 − 8)/56 < 0
  EXPECT_LT(noisy.gradient_sq_norm(), 0);
  EXPECT_EQ(noisy.noise_scale(), 0);
}

TEST(NoiseScaleEstimator, ARestoredStateContinuesBitForBit) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  NoiseScaleEstimator whole, first_half, second_half;
  for (int i = 0; i < 40; ++i) {
    const NoiseSample s = Expected(jitter(random), 100 * jitter(random), 8, 64);
    whole.Add(s);
    if (i < 20) {
      first_half.Add(s);
      if (i == 19) second_half.Restore(first_half.state());
    } else {
      second_half.Add(s);
    }
  }
  EXPECT_EQ(second_half.noise_scale(), whole.noise_scale());
  EXPECT_EQ(second_half.gradient_sq_norm(), whole.gradient_sq_norm());
  EXPECT_EQ(second_half.windows(), 40);
}

}  // namespace
}  // namespace accumulus
