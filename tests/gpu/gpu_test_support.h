// Shared by the GPU tests: the small MLP job they train, and running code
// under CUDA's sync debug mode.
#pragma once

#include <c10/cuda/CUDAFunctions.h>
#include <torch/torch.h>

#include <functional>
#include <string>

#include "worker/engine/train_config.h"

namespace accumulus::testing {

// A few steps of SGD with momentum on the MLP, short enough that fp32
// rounding differences between devices stay at rounding level: 200
// samples, global batch 64 as 16 × 4, so three full windows and a short one
// of 8 per epoch.
inline engine::TrainConfig SmallMlp(const std::string& device) {
  engine::TrainConfig c;
  c.model.hidden = {64, 64};
  c.data.samples = 200;
  c.data.features = 32;
  c.data.outputs = 5;
  c.data.seed = 3;
  c.optimizer.kind = engine::OptimizerKind::kSgd;
  c.optimizer.lr = 0.05;
  c.optimizer.momentum = 0.9;
  c.micro_batch = 16;
  c.accumulation_steps = 4;
  c.epochs = 1;
  c.seed = 5;
  c.device = device;
  c.lr_schedule.kind = engine::LrScheduleKind::kCosine;
  return c;
}

// Runs `work` with every synchronizing CUDA call an error; what the first
// one said ("" if none).
inline std::string SyncErrorIn(const std::function<void()>& work) {
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  std::string error;
  try {
    work();
  } catch (const c10::Error& e) {
    error = e.what_without_backtrace();
  }
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  return error;
}

}  // namespace accumulus::testing
