// Adaptive accumulation: which accumulation the next window uses, following
// the measured gradient noise scale within the spec's bounds.
//
// The global batch is micro_batch × accumulation × devices with micro_batch
// and devices fixed, so the rule moves accumulation only. Its target is the
// accumulation whose global batch is nearest the smoothed B_noise (clamped
// to [min_global_batch, max_global_batch]). Hysteresis keeps it from
// chasing noise: it changes at most once every `interval_steps` optimizer
// steps (and not before the first interval has passed, when the estimate
// has had windows to settle), only when the target lies outside a √2 band
// around the current batch, and then by at most 2× either way.
//
// Decisions depend only on the sequence of noise-scale values the rule is
// shown, so a resumed run that restores the state makes the same ones.
// Standard library only.
#pragma once

#include <cstdint>
#include <string>

namespace accumulus {

struct AdaptiveBatchConfig {
  int64_t min_global_batch = 0;
  int64_t max_global_batch = 0;
  int64_t interval_steps = 20;
  // micro_batch × devices: one unit of accumulation.
  int64_t batch_per_accumulation = 0;
};

class AdaptiveBatchRule {
 public:
  // What a checkpoint carries.
  struct State {
    int64_t accumulation = 0;
    int64_t last_change_step = 0;  // the step after which it last changed (0: never)
  };

  struct Decision {
    bool changed = false;
    int64_t accumulation = 0;  // in force for the next window
    std::string reason;        // why it changed (empty when it did not)
  };

  // `accumulation` is the one the job starts with, clamped into the bounds.
  AdaptiveBatchRule(const AdaptiveBatchConfig& config, int64_t accumulation);

  // The accumulations the bounds allow: [ceil(min / unit), floor(max /
  // unit)], at least 1.
  int64_t min_accumulation() const { return min_accumulation_; }
  int64_t max_accumulation() const { return max_accumulation_; }

  // After optimizer step `step` (1-based) with the smoothed noise scale
  // (0: not measured yet): the accumulation of step + 1.
  Decision After(int64_t step, double noise_scale);

  int64_t accumulation() const { return state_.accumulation; }
  int64_t batch_per_accumulation() const { return config_.batch_per_accumulation; }
  const State& state() const { return state_; }
  void Restore(const State& state) { state_ = state; }

 private:
  AdaptiveBatchConfig config_;
  int64_t min_accumulation_ = 1;
  int64_t max_accumulation_ = 1;
  State state_;
};

}  // namespace accumulus
