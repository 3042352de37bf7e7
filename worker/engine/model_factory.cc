#include "worker/engine/model_factory.h"

#include "worker/engine/mlp.h"

namespace accumulus::engine {

StatusOr<BuiltModel> BuildModel(const ModelConfig& config, int64_t inputs, int64_t outputs) {
  if (config.kind == "mlp") {
    Mlp mlp(inputs, config.hidden, outputs);
    return BuiltModel{mlp.ptr(), [mlp](const torch::Tensor& x) mutable { return mlp->forward(x); }};
  }
  return Status::InvalidArgument("model.kind \"" + config.kind + "\" is not a built-in model");
}

StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<torch::Tensor> parameters) {
  if (config.kind == "sgd") {
    auto options = torch::optim::SGDOptions(config.lr)
                       .momentum(config.momentum)
                       .weight_decay(config.weight_decay)
                       .nesterov(config.nesterov);
    return std::unique_ptr<torch::optim::Optimizer>(
        new torch::optim::SGD(std::move(parameters), options));
  }
  if (config.kind == "adamw") {
    auto options = torch::optim::AdamWOptions(config.lr)
                       .betas({config.beta1, config.beta2})
                       .eps(config.eps)
                       .weight_decay(config.weight_decay);
    return std::unique_ptr<torch::optim::Optimizer>(
        new torch::optim::AdamW(std::move(parameters), options));
  }
  return Status::InvalidArgument("optimizer.kind \"" + config.kind +
                                 "\" is not one of \"sgd\", \"adamw\"");
}

}  // namespace accumulus::engine
