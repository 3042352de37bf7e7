// Validation and defaults of a JobSpec, shared by the controller (which
// rejects bad specs before queueing them) and the trainer (which trusts
// nothing it did not check).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"
#include "common/window_schedule.h"

namespace accumulus {

// The longest job name, in bytes of UTF-8.
inline constexpr size_t kMaxJobNameBytes = 128;
// The largest spec, serialized: far above any real one, and small enough
// that the controller's memory per job stays bounded.
inline constexpr size_t kMaxSpecBytes = 64 * 1024;
// The longest path a spec may name (Linux's PATH_MAX).
inline constexpr size_t kMaxPathBytes = 4096;
// model.hidden: at most this many layers.
inline constexpr int kMaxHiddenLayers = 64;
// data.label_columns: at most this many targets (each name as label_column:
// at most 256 bytes).
inline constexpr int kMaxLabelColumns = 1024;
inline constexpr size_t kMaxColumnNameBytes = 256;
// labels: at most this many, keys of at most 63 bytes (after an optional
// DNS-style prefix of at most 253 and a "/"), values of at most 256.
inline constexpr int kMaxLabels = 32;
inline constexpr size_t kMaxLabelNameBytes = 63;
inline constexpr size_t kMaxLabelPrefixBytes = 253;
inline constexpr size_t kMaxLabelValueBytes = 256;

// The range a numeric field of a spec must be in once defaults are filled:
// the one table that validation, its tests and docs/job-spec.md follow.
struct NumericLimit {
  const char* field;  // as the YAML spells it, e.g. "optimizer.lr"
  double min;
  double max;
  bool min_open;  // the value must exceed min, not merely reach it
  bool max_open;
  bool integer;
};
const std::vector<NumericLimit>& NumericLimits();
// "[0, 1048576]", "(0, 1000]", "[0, 1)": the range as errors and the docs
// write it.
std::string RangeText(const NumericLimit& limit);

// Returns the spec with every defaulted field made explicit (devices 1,
// normalization "exact", AdamW betas, class count, data seed), or
// INVALID_ARGUMENT with a field violation for every offending field (by its
// path, e.g. "optimizer.lr", naming its value and what was expected), all of
// them at once.
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
// whose size the trainer reports in its plan). Costs the same for any
// max_steps or epoch count.
int64_t TotalSteps(const v1::JobSpec& spec, const v1::BatchPlan& batch);

}  // namespace accumulus
