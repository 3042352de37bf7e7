#include "common/adaptive_batch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace accumulus {
namespace {

// A target within this factor of the current batch changes nothing.
constexpr double kBand = 1.4142135623730951;  // √2

}  // namespace

AdaptiveBatchRule::AdaptiveBatchRule(const AdaptiveBatchConfig& config, int64_t accumulation)
    : config_(config) {
  const int64_t unit = std::max<int64_t>(1, config_.batch_per_accumulation);
  min_accumulation_ = std::max<int64_t>(1, (config_.min_global_batch + unit - 1) / unit);
  max_accumulation_ = std::max(min_accumulation_, config_.max_global_batch / unit);
  state_.accumulation = std::clamp(accumulation, min_accumulation_, max_accumulation_);
}

AdaptiveBatchRule::Decision AdaptiveBatchRule::After(int64_t step, double noise_scale) {
  Decision d;
  d.accumulation = state_.accumulation;
  if (!(noise_scale > 0) || !std::isfinite(noise_scale)) return d;
  if (step - state_.last_change_step < config_.interval_steps) return d;
  const double unit = static_cast<double>(std::max<int64_t>(1, config_.batch_per_accumulation));
  const double current = static_cast<double>(state_.accumulation);
  // In accumulation units, unrounded, and held within the bounds before it
  // is rounded: a huge estimate (an average |G|² barely above 0) would
  // overflow the conversion to an integer.
  const double wanted = std::clamp(noise_scale / unit, static_cast<double>(min_accumulation_),
                                   static_cast<double>(max_accumulation_));
  const auto rounded = static_cast<int64_t>(std::llround(wanted));
  int64_t next = state_.accumulation;
  if (wanted >= current * kBand) {
    next = std::min(2 * state_.accumulation, rounded);
  } else if (wanted <= current / kBand) {
    next = std::max((state_.accumulation + 1) / 2, rounded);
  }
  next = std::clamp(next, min_accumulation_, max_accumulation_);
  if (next == state_.accumulation) return d;
  const auto batch = [&](int64_t accumulation) {
    return std::to_string(accumulation * static_cast<int64_t>(unit));
  };
  char measured[32];
  std::snprintf(measured, sizeof measured, "%.4g", noise_scale);
  d.changed = true;
  d.accumulation = next;
  d.reason = std::string("the noise scale is ") + measured + ": global batch " +
             batch(state_.accumulation) + " -> " + batch(next) +
             (next == min_accumulation_ || next == max_accumulation_ ? " (at the bound)" : "");
  state_.accumulation = next;
  state_.last_change_step = step;
  return d;
}

}  // namespace accumulus
