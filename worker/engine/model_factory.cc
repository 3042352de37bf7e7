#include "worker/engine/model_factory.h"

#include <torch/script.h>
#include <unistd.h>

#include <sstream>

#include "common/model_file.h"
#include "worker/engine/charlm.h"
#include "worker/engine/cnn.h"
#include "worker/engine/durable_file.h"
#include "worker/engine/mlp.h"
#include "worker/engine/state_dict.h"

namespace accumulus::engine {
namespace {

// A built-in torch::nn module.
template <typename Holder>
class NnModel final : public Model {
 public:
  explicit NnModel(Holder module) : module_(std::move(module)) {}
  torch::Tensor Forward(const torch::Tensor& inputs) override { return module_->forward(inputs); }
  std::vector<torch::Tensor> Parameters() const override { return module_->parameters(); }
  std::vector<torch::Tensor> Buffers() const override { return module_->buffers(); }
  void To(const torch::Device& device) override { module_->to(device); }
  bool HasBatchNorm() const override {
    for (const auto& m : module_->modules()) {
      if (m->template as<torch::nn::BatchNorm1d>() || m->template as<torch::nn::BatchNorm2d>() ||
          m->template as<torch::nn::BatchNorm3d>()) {
        return true;
      }
    }
    return false;
  }
  StatusOr<std::string> Serialize() const override { return StateDictArchive(*module_); }

 private:
  Holder module_;
};

// A TorchScript module (torch.jit.script or torch.jit.trace, then save).
class ScriptModel final : public Model {
 public:
  explicit ScriptModel(torch::jit::Module module) : module_(std::move(module)) { module_.train(); }
  torch::Tensor Forward(const torch::Tensor& inputs) override {
    return module_.forward({inputs}).toTensor();
  }
  std::vector<torch::Tensor> Parameters() const override {
    std::vector<torch::Tensor> out;
    for (const auto& p : module_.parameters()) out.push_back(p);
    return out;
  }
  std::vector<torch::Tensor> Buffers() const override {
    std::vector<torch::Tensor> out;
    for (const auto& b : module_.buffers()) out.push_back(b);
    return out;
  }
  void To(const torch::Device& device) override { module_.to(device); }
  bool HasBatchNorm() const override {
    for (const auto& m : module_.modules()) {
      const std::string type = m.type()->name() ? m.type()->name()->name() : "";
      if (type.rfind("BatchNorm", 0) == 0) return true;
    }
    return false;
  }
  StatusOr<std::string> Serialize() const override {
    try {
      std::ostringstream out;
      module_.save(out);
      return out.str();
    } catch (const c10::Error& e) {
      return Status::Internal(std::string("cannot serialize the TorchScript module: ") +
                              e.what_without_backtrace());
    }
  }

 private:
  mutable torch::jit::Module module_;
};

template <typename Holder>
std::unique_ptr<Model> Wrap(Holder module) {
  return std::make_unique<NnModel<Holder>>(std::move(module));
}

}  // namespace

Status Model::Save(const std::string& path) const {
  StatusOr<std::string> bytes = Serialize();
  if (!bytes.ok()) return bytes.status();
  return ReplaceFileDurably(path, *bytes, ".tmp-" + std::to_string(getpid()));
}

void Model::ZeroGrad() {
  for (auto& p : Parameters()) p.mutable_grad() = torch::Tensor();
}

int64_t Model::CountParameters() const {
  int64_t n = 0;
  for (const auto& p : Parameters()) n += p.numel();
  return n;
}

StatusOr<std::unique_ptr<Model>> BuildModel(const ModelConfig& config, const DataShape& data) {
  switch (config.kind) {
    case ModelKind::kMlp:
      if (data.features <= 0 || data.outputs <= 0) {
        return Status::InvalidArgument(
            "model.kind \"mlp\" needs feature data (samples with labels)");
      }
      return Wrap(Mlp(data.features, config.hidden, data.outputs, config.checkpoint_activations));
    case ModelKind::kCnn: {
      if (data.channels <= 0) {
        return Status::InvalidArgument(
            "model.kind \"cnn\" needs image data (square images, e.g. an IDX file of rows × "
            "cols)");
      }
      const std::vector<int64_t> channels =
          config.hidden.empty() ? std::vector<int64_t>{16, 32} : config.hidden;
      return Wrap(Cnn(data.channels, channels, data.outputs, config.batch_norm,
                      config.checkpoint_activations));
    }
    case ModelKind::kCharLm: {
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
      options.checkpoint_activations = config.checkpoint_activations;
      return Wrap(CharLm(options));
    }
    case ModelKind::kTorchScript:
      if (config.checkpoint_activations) {
        return Status::InvalidArgument(
            "model.activation_checkpointing is for the built-in models, not \"torchscript\"");
      }
      if (Status file = CheckTorchScriptFile("model.path", config.path); !file.ok()) {
        return file;
      }
      try {
        return std::unique_ptr<Model>(new ScriptModel(torch::jit::load(config.path)));
      } catch (const c10::Error& e) {
        return Status::InvalidArgument("model.path " + config.path +
                                       ": not a TorchScript module (" + e.what_without_backtrace() +
                                       ")");
      }
  }
  return Status::Internal("model.kind: unknown value " +
                          std::to_string(static_cast<int>(config.kind)));
}

StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<torch::Tensor> parameters) {
  switch (config.kind) {
    case OptimizerKind::kSgd: {
      auto options = torch::optim::SGDOptions(config.lr)
                         .momentum(config.momentum)
                         .weight_decay(config.weight_decay)
                         .nesterov(config.nesterov);
      return std::unique_ptr<torch::optim::Optimizer>(
          new torch::optim::SGD(std::move(parameters), options));
    }
    case OptimizerKind::kAdamW: {
      auto options = torch::optim::AdamWOptions(config.lr)
                         .betas({config.beta1, config.beta2})
                         .eps(config.eps)
                         .weight_decay(config.weight_decay);
      return std::unique_ptr<torch::optim::Optimizer>(
          new torch::optim::AdamW(std::move(parameters), options));
    }
  }
  return Status::Internal("optimizer.kind: unknown value " +
                          std::to_string(static_cast<int>(config.kind)));
}

}  // namespace accumulus::engine
