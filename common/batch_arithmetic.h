// Batch arithmetic: effective batch = micro_batch × accumulation_steps × devices.
//
// Standard library only (the engine uses it too).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace accumulus {

// What a spec says about its batch. Zero means "not given"; negative values
// are rejected, never reinterpreted.
struct BatchRequest {
  int64_t global_batch = 0;
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 0;
  // Zero means one device.
  int64_t devices = 0;
};

// A complete, consistent batch: global_batch == micro_batch ×
// accumulation_steps × devices, every factor positive.
struct BatchSizes {
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 0;
  int64_t devices = 0;
  int64_t global_batch = 0;
};

// Derives the missing one of (global_batch, micro_batch, accumulation_steps)
// from the two given, or checks that three given ones agree. Fails with
// INVALID_ARGUMENT naming the fields and values when a value is negative,
// fewer than two are given, a division is not exact, the three disagree, or
// the product overflows.
StatusOr<BatchSizes> ResolveBatch(const BatchRequest& request);

// The nominal-batch scheme (Ultralytics' nbs): the accumulation that brings
// micro × devices closest to `nominal_batch`, max(round(nbs / (micro ×
// devices)), 1), reached by a linear ramp from 1 over `warmup_steps`
// optimizer steps. Rounds half to even, as NumPy and Python do.
int64_t NominalAccumulation(int64_t nominal_batch, int64_t micro_batch, int64_t devices,
                            int64_t step, int64_t warmup_steps);

// Weight decay scaled to the batch actually used per step: wd × micro ×
// devices × accumulation / nominal_batch.
double NominalWeightDecay(double weight_decay, int64_t nominal_batch, int64_t micro_batch,
                          int64_t devices, int64_t accumulation);

// The largest divisor of `n` that is at most `bound` (at least 1): a
// micro-batch that still splits a per-rank batch evenly.
int64_t LargestDivisorAtMost(int64_t n, int64_t bound);

}  // namespace accumulus
