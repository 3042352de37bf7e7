// What a run builds from its TrainConfig before it trains: the device, the
// process group of a data-parallel job, the window schedule's config, and
// the optimizer's hyperparameters at each step.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/window_schedule.h"
#include "worker/engine/process_group_sync.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

// "cpu", "cuda", "cuda:N"; FAILED_PRECONDITION for CUDA where LibTorch sees
// no device.
StatusOr<torch::Device> ParseDevice(const std::string& name);

// The process group of a data-parallel job (null for one rank), with every
// rank holding rank 0's parameters.
StatusOr<std::unique_ptr<GradientSync>> ConnectRanks(const TrainConfig& config,
                                                     const torch::Device& device,
                                                     const std::vector<torch::Tensor>& parameters);

WindowScheduleConfig ScheduleOf(const TrainConfig& c, int64_t samples, int64_t micro_batch,
                                int64_t accumulation_steps);

// Sets every parameter group's learning rate and weight decay (for the
// optimizers BuildOptimizer makes).
void SetHyperparameters(torch::optim::Optimizer& optimizer, double lr, double weight_decay);

}  // namespace accumulus::engine
