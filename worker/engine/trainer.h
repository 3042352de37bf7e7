// The accumulating training loop of one rank (ARCHITECTURE.md, "The
// accumulation loop"): for each window, k micro-batches of forward + backward,
// one normalization, one clip, one optimizer step, one StepReport.
#pragma once

#include <torch/types.h>

#include <atomic>
#include <functional>
#include <vector>

#include "common/status.h"
#include "worker/engine/events.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct TrainOptions {
  // Checked at every window boundary; when set, training stops there and
  // Train returns CANCELLED. May be null.
  const std::atomic<bool>* stop_requested = nullptr;
  // When set, receives copies of the model's parameters after the last step
  // (in Module::parameters() order).
  std::vector<torch::Tensor>* final_parameters = nullptr;
  // Called after each window's last backward, before the gradients are
  // synchronized and normalized, with the 1-based step (fault injection in
  // tests; gradient inspection).
  std::function<void(int64_t step, const std::vector<torch::Tensor>& parameters)> after_backward;
};

// Trains to the end of the configured epochs or steps. Never throws: LibTorch
// errors come back as INTERNAL with LibTorch's message.
Status Train(const TrainConfig& config, EventSink* sink, const TrainOptions& options = {});

}  // namespace accumulus::engine
