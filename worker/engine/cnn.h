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
  CnnImpl(int64_t in_channels, const std::vector<int64_t>& channels, int64_t classes,
          bool batch_norm);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Sequential features_;
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(Cnn);

}  // namespace accumulus::engine
