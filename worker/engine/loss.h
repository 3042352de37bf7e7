// Losses as sums over the items that count, with the count: the building
// block of exact normalization (divide once per window by the window's items).
#pragma once

#include <torch/torch.h>

#include "worker/engine/train_config.h"

namespace accumulus::engine {

enum class LossKind {
  // Cross-entropy over class logits; one item per sample.
  kCrossEntropy,
  // Squared error; one item per target element (so items / window matches
  // torch.nn.MSELoss(reduction="mean") on the full batch).
  kMeanSquaredError,
  // Cross-entropy per token of [batch, length, vocabulary] logits; one item
  // per target that is not kIgnoreIndex (padding does not count).
  kTokenCrossEntropy,
};

// The loss `choice` gives for a data task: cross-entropy is per token for
// language modeling; by task, classification and language modeling use
// cross-entropy, regression squared error.
LossKind LossOf(LossChoice choice, DataTask task);

struct LossSum {
  torch::Tensor sum;  // scalar, differentiable
  // How many items the sum covers: a float64 scalar on the loss's device,
  // so counting tokens costs no host sync per micro-batch.
  torch::Tensor items;
};

LossSum SumLoss(LossKind kind, const torch::Tensor& outputs, const torch::Tensor& targets);

}  // namespace accumulus::engine
