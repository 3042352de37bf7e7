// Builds the model and the optimizer a TrainConfig names.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

#include "common/status.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct BuiltModel {
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
};

// Parameters are initialized from LibTorch's global generator: seed it first
// (torch::manual_seed) for a reproducible initialization.
StatusOr<BuiltModel> BuildModel(const ModelConfig& config, int64_t inputs, int64_t outputs);

StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<torch::Tensor> parameters);

}  // namespace accumulus::engine
