// Validation and defaults of a JobSpec, shared by the controller (which
// rejects bad specs before queueing them) and the trainer (which trusts
// nothing it did not check).
#pragma once

#include "accumulus/v1/job.pb.h"
#include "common/status.h"
#include "common/window_schedule.h"

namespace accumulus {

// The longest job name, in bytes of UTF-8.
inline constexpr size_t kMaxJobNameBytes = 128;

// Returns the spec with every defaulted field made explicit (devices 1,
// normalization "exact", AdamW betas, class count, data seed), or
// INVALID_ARGUMENT naming the first offending field (by its path, e.g.
// "optimizer.lr") and its value.
StatusOr<v1::JobSpec> NormalizeJobSpec(const v1::JobSpec& spec);

// The batch arithmetic of a normalized spec.
StatusOr<v1::BatchPlan> ResolveBatchPlan(const v1::JobSpec& spec);

// An elastic job's plan on `devices` ranks (min_devices ≤ devices ≤
// spec.devices): the same global batch, the largest micro-batch up to the
// spec's that splits global_batch / devices evenly, and the accumulation that
// follows. INVALID_ARGUMENT when `devices` does not divide the global batch.
StatusOr<v1::BatchPlan> PlanForDevices(const v1::JobSpec& spec, const v1::BatchPlan& plan,
                                       int32_t devices);

// The windows of a normalized spec: its epochs cut into global batches under
// its partial-window policy and accumulation (constant or ramped).
WindowScheduleConfig ScheduleOf(const v1::JobSpec& spec, const v1::BatchPlan& batch);

// Optimizer steps the job takes in total; 0 while unknown (file data sets,
// whose size the trainer reports in its plan).
int64_t TotalSteps(const v1::JobSpec& spec, const v1::BatchPlan& batch);

}  // namespace accumulus
