// The gradient noise scale B_noise = tr(Σ)/|G|² (McCandlish et al. 2018,
// "An Empirical Model of Large-Batch Training", appendix A.1), estimated from
// the squared norms of mean gradients at two batch sizes.
//
// For a mean gradient g_B over B independent items, E|g_B|² = |G|² + tr(Σ)/B.
// Two batch sizes B_small < B_big then give unbiased estimates of both terms:
//   |G|²  ≈ (B_big·|g_big|² − B_small·|g_small|²) / (B_big − B_small)
//   tr(Σ) ≈ (|g_small|² − |g_big|²) / (1/B_small − 1/B_big)
// Each is noisy, and the ratio of two noisy estimates is biased, so each is
// smoothed by an exponential moving average first and B_noise is the ratio
// of the averages. The averages are bias-corrected as Adam's moments are, so
// the first windows are not pulled towards zero.
//
// Standard library only: the engine feeds it, the tests drive it directly.
#pragma once

#include <cstdint>

namespace accumulus {

// One window's measurement. small_batch is in items (samples, or tokens);
// where the small batch is several (one per rank, averaged), it is the
// harmonic mean of their sizes, since E|g|² is linear in 1/B.
struct NoiseSample {
  double small_batch = 0;
  double small_sq_norm = 0;
  double big_batch = 0;
  double big_sq_norm = 0;
};

// The unbiased estimates of one sample.
struct NoiseEstimate {
  double gradient_sq_norm = 0;  // |G|²
  double noise_trace = 0;       // tr(Σ)
};

// McCandlish's A.1 estimators for one sample. Requires 0 < small_batch <
// big_batch.
NoiseEstimate EstimateNoise(const NoiseSample& sample);

class NoiseScaleEstimator {
 public:
  // What a checkpoint carries: the raw (uncorrected) averages and how many
  // windows went into them.
  struct State {
    double gradient_sq_norm_average = 0;
    double noise_trace_average = 0;
    int64_t windows = 0;
  };

  // `decay` in [0, 1): the weight of the past in each update (0.95 averages
  // over about 40 windows).
  explicit NoiseScaleEstimator(double decay = kDefaultDecay) : decay_(decay) {}

  static constexpr double kDefaultDecay = 0.95;

  // True when the sample can be used (finite, 0 < small_batch < big_batch);
  // then the averages take it in. A false sample changes nothing.
  bool Add(const NoiseSample& sample);

  int64_t windows() const { return state_.windows; }
  // The bias-corrected averages (0 before the first window).
  double gradient_sq_norm() const;
  double noise_trace() const;
  // tr(Σ)/|G|² of the averages; 0 while the average |G|² is not positive
  // (early, or when the gradient is all noise at these batch sizes).
  double noise_scale() const;

  const State& state() const { return state_; }
  void Restore(const State& state) { state_ = state; }

 private:
  double Corrected(double average) const;

  double decay_;
  State state_;
};

}  // namespace accumulus
