#include "worker/engine/loss.h"

#include "worker/engine/dataset.h"

namespace accumulus::engine {

namespace F = torch::nn::functional;

namespace {

torch::Tensor Count(double items, const torch::Tensor& like) {
  return torch::scalar_tensor(items, like.options().dtype(torch::kFloat64));
}

}  // namespace

LossSum SumLoss(LossKind kind, const torch::Tensor& outputs, const torch::Tensor& targets) {
  switch (kind) {
    case LossKind::kCrossEntropy:
      return {
          F::cross_entropy(outputs, targets, F::CrossEntropyFuncOptions().reduction(torch::kSum)),
          Count(static_cast<double>(targets.size(0)), outputs)};
    case LossKind::kMeanSquaredError:
      return {F::mse_loss(outputs, targets, F::MSELossFuncOptions().reduction(torch::kSum)),
              Count(static_cast<double>(targets.numel()), outputs)};
    case LossKind::kTokenCrossEntropy: {
      const torch::Tensor flat_targets = targets.reshape({-1});
      return {F::cross_entropy(
                  outputs.reshape({-1, outputs.size(-1)}), flat_targets,
                  F::CrossEntropyFuncOptions().reduction(torch::kSum).ignore_index(kIgnoreIndex)),
              flat_targets.ne(kIgnoreIndex).sum().to(torch::kFloat64)};
    }
  }
  throw std::logic_error("unknown loss kind");
}

LossKind LossOf(LossChoice choice, DataTask task) {
  if (choice == LossChoice::kMeanSquaredError ||
      (choice == LossChoice::kByTask && task == DataTask::kRegression)) {
    return LossKind::kMeanSquaredError;
  }
  if (task == DataTask::kLanguageModeling) return LossKind::kTokenCrossEntropy;
  return LossKind::kCrossEntropy;
}

}  // namespace accumulus::engine
