#include "worker/engine/model_factory.h"

#include "worker/engine/charlm.h"
#include "worker/engine/cnn.h"
#include "worker/engine/dataset.h"
#include "worker/engine/mlp.h"

namespace accumulus::engine {

template <typename Holder>
BuiltModel Wrap(Holder model) {
  return BuiltModel{model.ptr(), [model](const torch::Tensor& x) mutable { return model->forward(x); }};
}

StatusOr<BuiltModel> BuildModel(const ModelConfig& config, const DataShape& data) {
  if (config.kind == "mlp") {
    if (data.features <= 0 || data.outputs <= 0) {
      return Status::InvalidArgument("model.kind \"mlp\" needs feature data (samples with outputs)");
    }
    return Wrap(Mlp(data.features, config.hidden, data.outputs));
  }
  if (config.kind == "cnn") {
    if (data.channels <= 0) {
      return Status::InvalidArgument(
          "model.kind \"cnn\" needs image data (square images, e.g. an IDX file of rows × cols)");
    }
    const std::vector<int64_t> channels =
        config.hidden.empty() ? std::vector<int64_t>{16, 32} : config.hidden;
    return Wrap(Cnn(data.channels, channels, data.outputs, config.norm == "batch"));
  }
  if (config.kind == "charlm") {
    if (data.sequence_length <= 0) {
      return Status::InvalidArgument("model.kind \"charlm\" needs token data");
    }
    CharLmOptions options;
    options.vocabulary = data.vocabulary;
    options.pad_token = data.pad_token;
    options.max_length = data.sequence_length;
    options.d_model = config.d_model;
    options.heads = config.heads;
    options.layers = config.layers;
    return Wrap(CharLm(options));
  }
  return Status::InvalidArgument("model.kind \"" + config.kind + "\" is not a built-in model");
}

bool HasBatchNorm(const torch::nn::Module& module) {
  for (const auto& m : module.modules()) {
    if (m->as<torch::nn::BatchNorm1d>() || m->as<torch::nn::BatchNorm2d>() ||
        m->as<torch::nn::BatchNorm3d>()) {
      return true;
    }
  }
  return false;
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
