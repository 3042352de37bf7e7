// `accumulus plan JOB.yaml --sweep`: how peak memory and samples/s change
// with the split of the job's global batch, measured by a local trainer
// process (the CLI itself never loads LibTorch).
#pragma once

#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

namespace accumulus::client {

struct SweepRow {
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 0;
  double samples_per_second = 0;
  int64_t peak_bytes = 0;
  // With activation checkpointing; 0 where not measured (TorchScript).
  double checkpointed_samples_per_second = 0;
  int64_t checkpointed_peak_bytes = 0;
  // The thread split the trainer measured as fastest (0 0: the spec fixed it).
  int intra_op_threads = 0;
  int blas_threads = 0;
};

// Runs `accumulus-trainer --sweep` on the (normalized) spec, on this machine.
StatusOr<std::vector<SweepRow>> RunSweep(const v1::JobSpec& spec, const v1::BatchPlan& batch);

// A table with an ASCII bar for each figure, scaled to the largest, and what
// activation checkpointing saves and costs at each split.
std::string SweepTable(const std::vector<SweepRow>& rows);

}  // namespace accumulus::client
