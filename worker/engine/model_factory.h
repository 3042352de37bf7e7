// Builds the model and the optimizer a TrainConfig names.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

#include "common/status.h"
#include "worker/engine/dataset.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct BuiltModel {
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
};

// The model `config` names, shaped for the data. Parameters are initialized
// from LibTorch's global generator: seed it first (torch::manual_seed) for a
// reproducible initialization.
StatusOr<BuiltModel> BuildModel(const ModelConfig& config, const DataShape& data);

// True when the model normalizes with batch statistics (BatchNorm), which
// come from one micro-batch, not from the whole window.
bool HasBatchNorm(const torch::nn::Module& module);

StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<torch::Tensor> parameters);

}  // namespace accumulus::engine
