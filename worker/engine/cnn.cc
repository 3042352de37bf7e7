#include "worker/engine/cnn.h"

#include "worker/engine/activation_checkpoint.h"

namespace accumulus::engine {

CnnImpl::CnnImpl(int64_t in_channels, const std::vector<int64_t>& channels, int64_t classes,
                 bool batch_norm, bool checkpoint_activations)
    : modules_per_block_(batch_norm ? 4 : 3), checkpoint_activations_(checkpoint_activations) {
  int64_t width = in_channels;
  for (int64_t c : channels) {
    features_->push_back(
        torch::nn::Conv2d(torch::nn::Conv2dOptions(width, c, 3).padding(1).bias(!batch_norm)));
    if (batch_norm) features_->push_back(torch::nn::BatchNorm2d(c));
    features_->push_back(torch::nn::ReLU());
    features_->push_back(torch::nn::MaxPool2d(2));
    width = c;
  }
  head_ = torch::nn::Linear(width, classes);
  register_module("features", features_);
  register_module("head", head_);
}

torch::Tensor CnnImpl::Block(size_t b, const torch::Tensor& x) {
  torch::Tensor y = x;
  for (size_t i = b * modules_per_block_; i < (b + 1) * modules_per_block_; ++i) {
    y = (features_->begin() + static_cast<std::ptrdiff_t>(i))->forward(y);
  }
  return y;
}

torch::Tensor CnnImpl::forward(torch::Tensor x) {
  const size_t blocks = features_->size() / modules_per_block_;
  for (size_t b = 0; b < blocks; ++b) {
    if (!checkpoint_activations_) {
      x = Block(b, x);
      continue;
    }
    CheckpointBlock block{[this, b](const torch::Tensor& t) { return Block(b, t); }, {}};
    for (size_t i = b * modules_per_block_; i < (b + 1) * modules_per_block_; ++i) {
      block.modules.push_back(features_->ptr(i));
    }
    x = Checkpoint(block, x);
  }
  return head_(x.mean({2, 3}));
}

}  // namespace accumulus::engine
