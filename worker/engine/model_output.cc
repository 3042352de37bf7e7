#include "worker/engine/model_output.h"

#include <utility>

namespace accumulus::engine {

OutputContract::OutputContract(std::string model, LossKind loss, const DataShape& data)
    : model_(std::move(model)), loss_(loss), data_(data) {}

void OutputContract::Check(const torch::Tensor& inputs, const torch::Tensor& outputs) const {
  const auto refuse = [&](const std::string& why) {
    throw ModelMismatch(model_ + "'s output is " + c10::str(outputs.sizes()) + " for inputs " +
                        c10::str(inputs.sizes()) + "; " + why);
  };
  const int64_t n = inputs.size(0);
  switch (loss_) {
    case LossKind::kCrossEntropy: {
      const int64_t classes = data_.outputs;
      if (outputs.dim() != 2 || outputs.size(0) != n || outputs.size(1) < classes) {
        refuse("cross-entropy over the data's " + std::to_string(classes) +
               " classes takes logits [" + std::to_string(n) + ", C], C at least " +
               std::to_string(classes));
      }
      break;
    }
    case LossKind::kMeanSquaredError: {
      // Exactly: mse_loss would broadcast [N] against [N, 1] into [N, N].
      const std::vector<int64_t> targets = {n, data_.outputs};
      if (outputs.sizes() != torch::IntArrayRef(targets)) {
        refuse("squared error against the data's " + std::to_string(data_.outputs) +
               " target(s) per sample takes exactly " + c10::str(torch::IntArrayRef(targets)));
      }
      break;
    }
    case LossKind::kTokenCrossEntropy:
      if (outputs.dim() != 3 || inputs.dim() != 2 || outputs.size(0) != n ||
          outputs.size(1) != inputs.size(1)) {
        refuse("cross-entropy per token takes logits [" + std::to_string(n) + ", " +
               std::to_string(inputs.dim() == 2 ? inputs.size(1) : 0) + ", V]");
      }
      break;
  }
  if (!outputs.is_floating_point()) {
    refuse(std::string("its values are ") + c10::toString(outputs.scalar_type()) +
           "; the loss takes floating-point ones");
  }
  if (torch::GradMode::is_enabled() && !outputs.requires_grad()) {
    refuse(
        "it depends on no trainable parameter (it records no gradient): are the parameters "
        "frozen (requires_grad=False) or the output detached?");
  }
}

std::string OutputContract::InputsNote() const {
  if (data_.vocabulary <= 0) return "";
  const std::string last = std::to_string(data_.vocabulary - 1);
  return "; its inputs are token ids 0 to " + last + ", " + std::to_string(data_.pad_token) +
         " the padding's: an embedding of " + std::to_string(data_.vocabulary) + " rows takes them";
}

}  // namespace accumulus::engine
