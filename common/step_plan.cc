#include "common/step_plan.h"

#include <algorithm>

namespace accumulus {

StepPlan PlanSteps(int64_t samples_per_epoch, int64_t global_batch, int64_t epochs,
                   int64_t max_steps) {
  StepPlan plan;
  plan.steps_per_epoch = (samples_per_epoch + global_batch - 1) / global_batch;
  if (epochs > 0) {
    plan.steps_total = epochs * plan.steps_per_epoch;
    if (max_steps > 0) plan.steps_total = std::min(plan.steps_total, max_steps);
  } else {
    plan.steps_total = max_steps;
  }
  return plan;
}

}  // namespace accumulus
