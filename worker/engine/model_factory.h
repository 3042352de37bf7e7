// The model a job trains, behind one interface whether it is a built-in
// torch::nn module or a TorchScript module a user exported from Python; and
// the optimizer over its parameters.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/engine/dataset.h"
#include "worker/engine/loss.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

class Model {
 public:
  virtual ~Model() = default;
  virtual torch::Tensor Forward(const torch::Tensor& inputs) = 0;
  // The trainable parameters, in a stable order.
  virtual std::vector<torch::Tensor> Parameters() const = 0;
  // The non-trainable state (BatchNorm running statistics), in a stable order.
  virtual std::vector<torch::Tensor> Buffers() const = 0;
  virtual void To(const torch::Device& device) = 0;
  // True when the model normalizes with batch statistics (BatchNorm), which
  // come from one micro-batch, not from the whole window.
  virtual bool HasBatchNorm() const = 0;
  // The trained model as a file's bytes: a state-dict archive for built-ins
  // (Python's torch.load reads it), a TorchScript archive for TorchScript
  // models.
  virtual StatusOr<std::string> Serialize() const = 0;

  // Serialize, replacing `path` durably (durable_file.h).
  Status Save(const std::string& path) const;

  // Frees every gradient (zero_grad(set_to_none=True)).
  void ZeroGrad();
  int64_t CountParameters() const;
};

// The model `config` names, shaped for the data. Built-in parameters are
// initialized from LibTorch's global generator: seed it first
// (torch::manual_seed) for a reproducible initialization. TorchScript models
// come with their parameters from config.path, and their every output is
// checked against what `loss` takes (model_output.h).
StatusOr<std::unique_ptr<Model>> BuildModel(const ModelConfig& config, const DataShape& data,
                                            LossKind loss);

StatusOr<std::unique_ptr<torch::optim::Optimizer>> BuildOptimizer(
    const OptimizerConfig& config, std::vector<torch::Tensor> parameters);

}  // namespace accumulus::engine
