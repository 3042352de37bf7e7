#include "worker/engine/model_factory.h"

#include <torch/script.h>
#include <unistd.h>

#include <sstream>

#include "common/model_file.h"
#include "worker/engine/charlm.h"
#include "worker/engine/cnn.h"
#include "worker/engine/durable_file.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/mlp.h"
#include "worker/engine/model_output.h"
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
  ScriptModel(torch::jit::Module module, OutputContract contract)
      : module_(std::move(module)), contract_(std::move(contract)) {
    module_.train();
  }
  // What its forward pass throws is the module's doing, and the spec's
  // fault (ModelMismatch) — but for what the device or the process runs
  // out of, and a peer's failure. The output must be what the loss takes.
  torch::Tensor Forward(const torch::Tensor& inputs) override {
    const int64_t refused = RefusedAllocations(inputs.device());
    c10::IValue out;
    try {
      out = module_.forward({inputs});
    } catch (const c10::OutOfMemoryError&) {
      throw;
    } catch (const c10::AcceleratorError&) {
      throw;
    } catch (const c10::DistError&) {
      throw;
    } catch (const std::exception& e) {
      // LibTorch's own errors, the interpreter's (a runtime_error with the
      // module's traceback) and what the module raises (JITException).
      const auto* error = dynamic_cast<const c10::Error*>(&e);
      const std::string why = error != nullptr ? error->what_without_backtrace() : e.what();
      // The interpreter hands an out-of-memory error on as a runtime_error.
      TORCH_CHECK_WITH(OutOfMemoryError, RefusedAllocations(inputs.device()) == refused,
                       contract_.model(), "'s forward pass ran out of memory: ", why);
      throw ModelMismatch(contract_.model() + "'s forward pass fails on inputs " +
                          c10::str(inputs.sizes()) + " (" + c10::toString(inputs.scalar_type()) +
                          ")" + contract_.InputsNote() + ": " + why);
    }
    if (!out.isTensor()) {
      throw ModelMismatch(contract_.model() + "'s forward pass returns a " + out.tagKind() +
                          "; the loss takes one tensor: return the logits (or the "
                          "predictions) alone");
    }
    torch::Tensor outputs = out.toTensor();
    contract_.Check(inputs, outputs);
    return outputs;
  }
  // Frozen parameters (requires_grad=False) are not trained: they get no
  // gradient, no optimizer state and no place in a checkpoint (a resumed
  // run loads them from model.path again).
  std::vector<torch::Tensor> Parameters() const override {
    std::vector<torch::Tensor> out;
    for (const auto& p : module_.parameters()) {
      if (p.requires_grad()) out.push_back(p);
    }
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
  const OutputContract contract_;
};

// Where a loaded module cannot take a job's micro-batch: its forward pass
// takes other than the one input a job passes.
Status CheckForwardTakesOneInput(const torch::jit::Module& module, const std::string& name) {
  const std::optional<torch::jit::Method> forward = module.find_method("forward");
  if (!forward) return Status::InvalidArgument(name + " has no forward method");
  std::vector<std::string> required;
  const std::vector<c10::Argument>& arguments = forward->function().getSchema().arguments();
  for (size_t i = 1; i < arguments.size(); ++i) {  // [0] is self
    if (!arguments[i].default_value()) required.push_back(arguments[i].name());
  }
  if (required.size() != 1) {
    std::string listed;
    for (const std::string& a : required) listed += (listed.empty() ? "" : ", ") + a;
    return Status::InvalidArgument(name + "'s forward takes " + std::to_string(required.size()) +
                                   " inputs without defaults" +
                                   (listed.empty() ? "" : " (" + listed + ")") +
                                   "; a job passes one: a micro-batch of the data's inputs");
  }
  return Status::Ok();
}

// Whether `blocks` conv blocks of the cnn, each halving the image (max
// pooling by 2, rounding down), leave a pixel of an image of `image_size`.
Status CheckCnnFits(size_t blocks, int64_t image_size) {
  int64_t side = image_size;
  size_t fitting = 0;
  while (side >= 2) side /= 2, ++fitting;
  if (blocks <= fitting) return Status::Ok();
  const std::string size = std::to_string(image_size);
  return Status::InvalidArgument("model.hidden: " + std::to_string(blocks) +
                                 " conv blocks, each halving the image, leave nothing of a " +
                                 size + " × " + size + " image; it takes at most " +
                                 std::to_string(fitting));
}

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

StatusOr<std::unique_ptr<Model>> BuildModel(const ModelConfig& config, const DataShape& data,
                                            LossKind loss) {
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
      if (Status s = CheckCnnFits(channels.size(), data.image_size); !s.ok()) return s;
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
        torch::jit::Module module = torch::jit::load(config.path);
        const std::string name = "model.path " + config.path + ": the module";
        if (Status s = CheckForwardTakesOneInput(module, name); !s.ok()) return s;
        std::unique_ptr<Model> model(
            new ScriptModel(std::move(module), OutputContract(name, loss, data)));
        if (model->Parameters().empty()) {
          return Status::InvalidArgument(name +
                                         " has no trainable parameters (none requires grad)");
        }
        return model;
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
