// How many optimizer steps a job takes. Standard library only.
#pragma once

#include <cstdint>

namespace accumulus {

struct StepPlan {
  // Optimizer steps in one epoch: one per global batch, the last one short
  // when samples_per_epoch is not a multiple of the global batch.
  int64_t steps_per_epoch = 0;
  // Steps the job takes: epochs × steps_per_epoch, capped by max_steps.
  int64_t steps_total = 0;
};

// epochs == 0 or max_steps == 0 means "no limit" for that bound; at least one
// must be positive (spec validation guarantees it).
StepPlan PlanSteps(int64_t samples_per_epoch, int64_t global_batch, int64_t epochs,
                   int64_t max_steps);

}  // namespace accumulus
