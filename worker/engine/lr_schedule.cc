#include "worker/engine/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace accumulus::engine {

double LearningRate(const LrScheduleConfig& config, double base_lr, int64_t step,
                    int64_t total_steps) {
  if (step < config.warmup_steps) {
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(config.warmup_steps);
  }
  const double min_lr = base_lr * config.min_lr_ratio;
  // Progress through the decay: 0 on the first step after warmup, 1 on the last.
  const int64_t span = std::max<int64_t>(1, total_steps - 1 - config.warmup_steps);
  const double progress = std::clamp(
      static_cast<double>(step - config.warmup_steps) / static_cast<double>(span), 0.0, 1.0);
  switch (config.kind) {
    case LrScheduleKind::kConstant:
      return base_lr;
    case LrScheduleKind::kCosine:
      return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
    case LrScheduleKind::kLinear:
      return base_lr - (base_lr - min_lr) * progress;
  }
  return base_lr;
}

double LinearlyScaledLr(double lr, int64_t global_batch, int64_t base_batch) {
  return lr * static_cast<double>(global_batch) / static_cast<double>(base_batch);
}

double ScaledLr(LrScaling rule, double lr, int64_t global_batch, int64_t base_batch) {
  if (base_batch <= 0) return lr;
  switch (rule) {
    case LrScaling::kNone:
      return lr;
    case LrScaling::kLinear:
      return LinearlyScaledLr(lr, global_batch, base_batch);
    case LrScaling::kSqrt:
      return lr * std::sqrt(static_cast<double>(global_batch) / static_cast<double>(base_batch));
  }
  return lr;
}

}  // namespace accumulus::engine
