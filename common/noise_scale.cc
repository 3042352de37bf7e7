#include "common/noise_scale.h"

#include <cmath>

namespace accumulus {

NoiseEstimate EstimateNoise(const NoiseSample& s) {
  NoiseEstimate e;
  e.gradient_sq_norm = (s.big_batch * s.big_sq_norm - s.small_batch * s.small_sq_norm) /
                       (s.big_batch - s.small_batch);
  e.noise_trace = (s.small_sq_norm - s.big_sq_norm) / (1.0 / s.small_batch - 1.0 / s.big_batch);
  return e;
}

bool NoiseScaleEstimator::Add(const NoiseSample& sample) {
  const bool usable = std::isfinite(sample.small_sq_norm) && std::isfinite(sample.big_sq_norm) &&
                      sample.small_batch > 0 && sample.small_batch < sample.big_batch &&
                      std::isfinite(sample.big_batch);
  if (!usable) return false;
  const NoiseEstimate e = EstimateNoise(sample);
  state_.gradient_sq_norm_average =
      decay_ * state_.gradient_sq_norm_average + (1 - decay_) * e.gradient_sq_norm;
  state_.noise_trace_average = decay_ * state_.noise_trace_average + (1 - decay_) * e.noise_trace;
  ++state_.windows;
  return true;
}

double NoiseScaleEstimator::Corrected(double average) const {
  if (state_.windows == 0) return 0;
  return average / (1 - std::pow(decay_, static_cast<double>(state_.windows)));
}

double NoiseScaleEstimator::gradient_sq_norm() const {
  return Corrected(state_.gradient_sq_norm_average);
}

double NoiseScaleEstimator::noise_trace() const { return Corrected(state_.noise_trace_average); }

double NoiseScaleEstimator::noise_scale() const {
  // The bias corrections cancel in the ratio; the raw averages are used.
  if (state_.windows == 0 || state_.gradient_sq_norm_average <= 0) return 0;
  return state_.noise_trace_average / state_.gradient_sq_norm_average;
}

}  // namespace accumulus
