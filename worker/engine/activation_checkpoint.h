// Activation checkpointing: run a block of a model keeping only its input for
// backward, and recompute the block's activations when backward reaches it.
// A micro-batch then holds the activations of one block at a time (plus the
// blocks' inputs) instead of all of them; the price is one more forward of
// every checkpointed block per backward.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace accumulus::engine {

struct CheckpointBlock {
  // The block's computation. It must be deterministic given its input (no
  // dropout): the recomputation has to reproduce the forward exactly.
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  // The modules that own the block's parameters and buffers.
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
};

// block.forward(input), with only `input` kept for backward. Outside grad
// mode it is a plain call. The recomputation runs under the autocast state of
// the forward, and buffers (BatchNorm running statistics) are restored after
// it, so they move once per forward, as without checkpointing.
torch::Tensor Checkpoint(const CheckpointBlock& block, const torch::Tensor& input);

}  // namespace accumulus::engine
