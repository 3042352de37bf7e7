// How peak memory and throughput change with the split of one global batch:
// a few real windows of the job per candidate micro-batch size.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "worker/engine/thread_split.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct SplitMeasurement {
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 0;
  double samples_per_second = 0;  // over the measured windows
  int64_t peak_bytes = 0;         // the largest window peak
  // The thread split measured for this split ({0, 0}: the config fixed it).
  ThreadSplit threads;
  // The same with activation checkpointing (built-in models; 0: not
  // measured), so the table shows what it saves and what it costs.
  double checkpointed_samples_per_second = 0;
  int64_t checkpointed_peak_bytes = 0;
};

// For each micro-batch in `micro_batches` (each must divide the per-rank
// batch micro × accumulation of `config`), trains `windows` + 1 windows from
// the job's start and measures all but the first (which pays one-time
// costs), without and (for built-in models) with activation checkpointing.
// Runs on one rank.
StatusOr<std::vector<SplitMeasurement>> SweepSplits(const TrainConfig& config,
                                                    const std::vector<int64_t>& micro_batches,
                                                    int64_t windows);

// The usual candidates: the per-rank batch divided by 1, 4, 16 and 64, where
// that divides evenly.
std::vector<int64_t> DefaultSweep(int64_t per_rank_batch);

}  // namespace accumulus::engine
