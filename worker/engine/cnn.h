// The built-in CNN for images: blocks of Conv3×3 → BatchNorm → ReLU →
// MaxPool2×2, then global average pooling and a Linear head.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace accumulus::engine {

class CnnImpl : public torch::nn::Module {
 public:
  // `channels`: output channels of each block; `batch_norm` false drops the
  // BatchNorm layers (then k micro-batches equal one batch exactly).
  // `checkpoint_activations`: each block keeps only its input for backward
  // and recomputes the rest.
  CnnImpl(int64_t in_channels, const std::vector<int64_t>& channels, int64_t classes,
          bool batch_norm, bool checkpoint_activations = false);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::Tensor Block(size_t b, const torch::Tensor& x);

  // The conv blocks' modules, in order (state-dict names features.N.*).
  torch::nn::Sequential features_;
  size_t modules_per_block_;
  bool checkpoint_activations_;
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(Cnn);

}  // namespace accumulus::engine
