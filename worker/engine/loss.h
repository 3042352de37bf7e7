// Losses as sums over the items that count, with the count: the building
// block of exact normalization (divide once per window by the window's items).
#pragma once

#include <torch/torch.h>

namespace accumulus::engine {

enum class LossKind {
  // Cross-entropy over class logits; one item per sample.
  kCrossEntropy,
  // Squared error; one item per target element (so items / window matches
  // torch.nn.MSELoss(reduction="mean") on the full batch).
  kMeanSquaredError,
};

struct LossSum {
  torch::Tensor sum;  // scalar, differentiable
  int64_t items = 0;
};

LossSum SumLoss(LossKind kind, const torch::Tensor& outputs, const torch::Tensor& targets);

}  // namespace accumulus::engine
