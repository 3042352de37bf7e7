// What the job's loss takes from a model's forward pass, checked on every
// micro-batch (sizes only: no host sync). The built-in models are made to
// fit; a module the user brings (TorchScript) may not, and would otherwise
// fail inside the loss in LibTorch's words, on CUDA as a device-side assert
// that ends the process, or — squared error broadcasts [N] against [N, 1]
// to [N, N] — not fail at all and train on a wrong loss.
#pragma once

#include <torch/torch.h>

#include <stdexcept>
#include <string>

#include "worker/engine/dataset.h"
#include "worker/engine/loss.h"

namespace accumulus::engine {

// A model that does not fit the job: its forward pass fails, or returns
// what the loss cannot take. The message names the model ("model.path
// PATH: the module") and both shapes. Train reports it as the spec's fault
// (INVALID_ARGUMENT), which no restart retries.
class ModelMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OutputContract {
 public:
  // `model` names the model in messages: "model.path /m/net.pt: the module".
  OutputContract(std::string model, LossKind loss, const DataShape& data);

  // Throws ModelMismatch where `outputs`, the forward of `inputs`, is not
  // what the loss takes: class logits [N, C] with C at least the data's
  // classes; regression targets exactly [N, M]; token logits [N, L, V].
  // Floating point, and (where gradients are recorded) differentiable.
  void Check(const torch::Tensor& inputs, const torch::Tensor& outputs) const;

  // What a module must know of its inputs that their shape does not say,
  // for a message about a forward pass that failed: token data's ids,
  // padding included ("; its inputs are token ids 0 to 65536, 65536 the
  // padding's: an embedding of 65537 rows takes them"); "" otherwise.
  std::string InputsNote() const;

  // The model as messages name it.
  const std::string& model() const { return model_; }

 private:
  std::string model_;
  LossKind loss_;
  DataShape data_;
};

}  // namespace accumulus::engine
