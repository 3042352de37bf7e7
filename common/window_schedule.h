// Which samples each optimizer step sees: the windows of a job, in order.
// Standard library only.
//
// The samples form one stream: epoch 0's permutation, then epoch 1's, and so
// on. Each step takes the next global batch (micro_batch × accumulation_t ×
// devices, where accumulation_t may ramp up during warmup) from the stream.
// What happens where an epoch ends inside a window is the partial-window
// policy. Which samples a step sees depends only on the seed, the epochs and
// the global batch sizes, never on how a window is split into micro-batches
// and ranks.
#pragma once

#include <cstdint>
#include <vector>

namespace accumulus {

enum class PartialWindow {
  // A short last window of each epoch is one step, normalized by its real
  // item count.
  kNormalize,
  // A short last window of each epoch is skipped.
  kDrop,
  // Windows run across epoch boundaries; only the very last window of the
  // job may be short.
  kCarry,
};

// Positions [begin, end) of one epoch's permutation.
struct Segment {
  int64_t epoch = 0;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

struct Window {
  int64_t step = 0;          // 1-based
  int64_t epoch = 0;         // the epoch of its first sample
  int64_t accumulation = 0;  // micro-batches per rank at full size
  int64_t global_batch = 0;  // nominal: micro × accumulation × devices
  std::vector<Segment> segments;
  int64_t size() const;
};

// Where the stream stands between windows: what a checkpoint of an adaptive
// run records (its windows cannot be recomputed from the config alone).
struct SchedulePosition {
  int64_t step = 0;  // windows taken
  int64_t epoch = 0;
  int64_t offset = 0;  // within epoch
};

struct WindowScheduleConfig {
  int64_t samples_per_epoch = 0;
  int64_t micro_batch = 0;
  int64_t devices = 1;
  // Micro-batches per rank and window; with a nominal batch (> 0) it is
  // derived per step instead (NominalAccumulation, ramped over warmup_steps).
  int64_t accumulation_steps = 1;
  int64_t nominal_batch = 0;
  int64_t warmup_steps = 0;
  PartialWindow policy = PartialWindow::kNormalize;
  int64_t epochs = 0;     // 0: no limit
  int64_t max_steps = 0;  // 0: no limit
};

class WindowSchedule {
 public:
  // The accumulation of step t (0-based).
  static int64_t AccumulationAt(const WindowScheduleConfig& config, int64_t step);

  explicit WindowSchedule(WindowScheduleConfig config);

  // The next window, or false when the job is done.
  bool Next(Window* window);

  // Adaptive accumulation: windows from the next one on take `accumulation`
  // micro-batches per rank (not in nominal-batch mode), and steps_total()
  // is counted again from here.
  void set_accumulation(int64_t accumulation);
  int64_t accumulation() const { return config_.accumulation_steps; }

  SchedulePosition position() const { return {step_, epoch_, offset_}; }
  // Continues from `position` (one of this schedule's, from position()).
  void Seek(const SchedulePosition& position);

  // Steps the whole job takes: the ramp of a nominal batch walked window by
  // window, the constant rest counted in closed form, so that the count
  // costs the same for 10 steps and for 10^9 (the controller counts every
  // job it accepts).
  int64_t steps_total() const { return steps_total_; }
  // Steps of the first epoch (the plan users see up front).
  int64_t steps_in_first_epoch() const { return steps_first_epoch_; }

 private:
  bool Advance(Window* window);
  // The windows from the current position to the end with the
  // accumulation then in force (any ramp over), within max_steps: returns
  // them all and sets *in_epoch_0 to those starting in epoch 0.
  int64_t CountFromHere(int64_t* in_epoch_0 = nullptr) const;

  WindowScheduleConfig config_;
  int64_t steps_total_ = 0;
  int64_t steps_first_epoch_ = 0;
  // Position of the stream.
  int64_t step_ = 0;
  int64_t epoch_ = 0;
  int64_t offset_ = 0;  // within epoch_
};

}  // namespace accumulus
