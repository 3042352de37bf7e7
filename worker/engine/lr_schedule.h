// Learning rate and accumulation schedules, stepped once per optimizer step
// (never per micro-batch), with a horizon counted in optimizer steps.
// Standard library only.
#pragma once

#include <cstdint>

namespace accumulus::engine {

// The decay after the warmup.
enum class LrScheduleKind { kConstant, kCosine, kLinear };

struct LrScheduleConfig {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  // Steps of linear warmup: lr × (t + 1) / warmup_steps for t < warmup_steps.
  int64_t warmup_steps = 0;
  // The decay ends at lr × min_lr_ratio on the last step.
  double min_lr_ratio = 0;
};

// The learning rate of optimizer step t (0-based) of `total_steps`.
double LearningRate(const LrScheduleConfig& config, double base_lr, int64_t step,
                    int64_t total_steps);

// How the learning rate follows the global batch.
enum class LrScaling {
  kNone,
  // Goyal et al. 2017: lr × global_batch / base_batch.
  kLinear,
  // Krizhevsky 2014 (the rule for Adam-type optimizers): lr ×
  // sqrt(global_batch / base_batch).
  kSqrt,
};

// The linear scaling rule (Goyal et al. 2017): lr × global_batch / base_batch.
double LinearlyScaledLr(double lr, int64_t global_batch, int64_t base_batch);

// lr scaled from base_batch to global_batch by `rule` (kNone, or base_batch
// 0: lr unchanged).
double ScaledLr(LrScaling rule, double lr, int64_t global_batch, int64_t base_batch);

}  // namespace accumulus::engine
