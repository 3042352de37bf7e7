// The thread split a CPU rank trains with (TrainConfig::
// measure_thread_split_cores): the checkpoint's when resuming on as many
// ranks with as many cores, else the fastest for this micro-batch, measured
// (thread_split.h); the same on every rank of a data-parallel job.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "worker/engine/checkpoint.h"
#include "worker/engine/dataset.h"
#include "worker/engine/events.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/train_config.h"
#include "worker/engine/window_accumulator.h"

namespace accumulus::engine {

// Applies the split and records it (and the trials measured) in `run`. In
// a data-parallel job every rank joins one agreement, whether it measures or
// not (ranks on different workers may differ), and a measuring rank takes
// rank 0's split when it has the same candidates, so ranks on one split
// reduce alike. `same_split`: the run resumes where it left off on as many
// ranks.
void ChooseThreadSplit(const TrainConfig& config, const TrainingState& resumed, bool same_split,
                       int64_t micro, Model& model, WindowAccumulator& window, const Dataset& data,
                       const torch::Device& device, GradientSync* sync, EventSink* sink,
                       RunReport* run);

}  // namespace accumulus::engine
