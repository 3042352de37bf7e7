#include "worker/engine/loss.h"

namespace accumulus::engine {

namespace F = torch::nn::functional;

LossSum SumLoss(LossKind kind, const torch::Tensor& outputs, const torch::Tensor& targets) {
  switch (kind) {
    case LossKind::kCrossEntropy:
      return {
          F::cross_entropy(outputs, targets, F::CrossEntropyFuncOptions().reduction(torch::kSum)),
          targets.size(0)};
    case LossKind::kMeanSquaredError:
      return {F::mse_loss(outputs, targets, F::MSELossFuncOptions().reduction(torch::kSum)),
              targets.numel()};
  }
  throw std::logic_error("unknown loss kind");
}

}  // namespace accumulus::engine
