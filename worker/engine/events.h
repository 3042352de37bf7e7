// What the engine reports while it trains, through an EventSink the caller
// provides (the trainer process turns these into protobuf events).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/noise_scale.h"
#include "worker/engine/thread_split.h"

namespace accumulus::engine {

// One candidate of micro_batch: auto.
struct MicroBatchProbe {
  int64_t micro_batch = 0;
  int64_t peak_bytes = 0;  // forward + backward peak plus the optimizer state
  bool fits = false;
};

// Sent once, before the first step.
struct RunReport {
  // The split in force at the start (chosen by the probe under auto).
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 0;
  std::vector<MicroBatchProbe> probe;
  std::string device;
  int64_t parameters = 0;
  int64_t samples_per_epoch = 0;
  int64_t steps_per_epoch = 0;  // of the first epoch
  int64_t steps_total = 0;
  double lr_first = 0;
  double lr_last = 0;
  // Accumulation of the first steps while it ramps (empty when constant).
  std::vector<int64_t> accumulation_ramp;
  // Resumed from a checkpoint taken after this step (0: a fresh start); the
  // first StepReport is then step resumed_from_step + 1.
  int64_t resumed_from_step = 0;
  // Under measure_thread_split_cores: the split in force, and each
  // candidate's measured rate (empty when taken from the checkpoint).
  // {0, 0} when the thread counts were given.
  ThreadSplit threads;
  std::vector<ThreadTrial> thread_trials;
};

struct NoiseReport {
  bool measured = false;  // this window
  NoiseSample sample;     // this window's norms
  NoiseEstimate window;   // this window's unbiased estimates
  // Smoothed over the windows so far (windows: how many; 0: none yet).
  int64_t windows = 0;
  double noise_scale = 0;
  double gradient_sq_norm = 0;
  double noise_trace = 0;
};

// One optimizer step (one accumulation window).
struct StepReport {
  int64_t step = 0;  // 1-based
  int64_t epoch = 0;
  int64_t microbatches = 0;
  int64_t samples = 0;
  int64_t effective_batch = 0;
  int64_t loss_items = 0;
  double loss = 0;  // mean over the window's items
  double lr = 0;
  double grad_norm = 0;  // before clipping
  bool clipped = false;
  double samples_per_second = 0;
  double step_seconds = 0;
  int64_t tensor_bytes = 0;
  int64_t tensor_peak_bytes = 0;
  int64_t process_rss_bytes = 0;
  // CUDA caching allocator: bytes reserved from the device, retried
  // allocations so far (0 on CPU).
  int64_t allocator_reserved_bytes = 0;
  int64_t allocator_retries = 0;
  int64_t steps_total = 0;
  // This rank's gradient synchronization in this window.
  int64_t allreduce_calls = 0;
  int64_t allreduce_bytes = 0;
  double comm_seconds = 0;
  // Loss scaling: the window's scale, whether the step was skipped on an
  // overflow, and how many were skipped so far.
  double loss_scale = 1.0;
  bool skipped = false;
  int64_t skipped_steps = 0;
  // This rank's window by phase (worker/engine/phase_clock.h).
  double forward_seconds = 0;
  double backward_seconds = 0;
  double optimizer_seconds = 0;
  // Token data sets: target tokens of the window on all ranks (0 otherwise).
  int64_t tokens = 0;
  // The gradient noise scale (common/noise_scale.h), in the loss's items
  // (tokens when `tokens` > 0): measured = false where it cannot be (one
  // micro-batch per window on one rank) or in a skipped window; the
  // smoothed values then carry the last measurement's.
  NoiseReport noise;
};

// Rank 0 wrote a checkpoint after `step`.
struct CheckpointReport {
  int64_t step = 0;
  std::string path;
  int64_t bytes = 0;
  double seconds = 0;
};

// Rank 0 could not write the checkpoint after `step`; the newest written
// one is after `resumes_after_step` (0: none).
struct CheckpointFailure {
  int64_t step = 0;
  std::string reason;
  int64_t resumes_after_step = 0;
};

// The split changed mid-run: a window ran out of memory and is run again
// with a smaller micro-batch (and as much more accumulation), which every
// later window keeps. The batch plan is the controller's; this tells it.
struct SplitChange {
  int64_t step = 0;  // the window run again with the new split
  int64_t micro_batch = 0;
  int64_t accumulation_steps = 0;
  std::string reason;
};

// Adaptive accumulation changed the global batch after a window.
struct BatchChange {
  int64_t step = 0;  // the first step with the new batch
  int64_t accumulation_steps = 0;
  int64_t global_batch = 0;
  int64_t previous_global_batch = 0;
  double noise_scale = 0;
  double lr = 0;  // the learning rate the schedule now scales from
  std::string reason;
};

enum class LogLevel { kInfo, kWarning, kError };

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnRun(const RunReport& report) = 0;
  virtual void OnStep(const StepReport& report) = 0;
  virtual void OnSplitChange(const SplitChange& change) = 0;
  // A sink that keeps no record of checkpoints logs it.
  virtual void OnCheckpoint(const CheckpointReport& report) {
    OnLog(LogLevel::kInfo,
          "checkpoint after step " + std::to_string(report.step) + ": " + report.path);
  }
  // A sink that keeps no record of checkpoints logs a failed one too.
  virtual void OnCheckpointFailed(const CheckpointFailure& failure) {
    OnLog(LogLevel::kWarning, "checkpoint after step " + std::to_string(failure.step) +
                                  " not written: " + failure.reason);
  }
  // A sink that keeps no record of batch changes logs them.
  virtual void OnBatchChange(const BatchChange& change) {
    OnLog(LogLevel::kInfo, "global batch " + std::to_string(change.previous_global_batch) + " -> " +
                               std::to_string(change.global_batch) + " from step " +
                               std::to_string(change.step) + ": " + change.reason);
  }
  virtual void OnLog(LogLevel level, const std::string& text) = 0;
};

}  // namespace accumulus::engine
