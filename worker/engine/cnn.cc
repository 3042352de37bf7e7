#include "worker/engine/cnn.h"

namespace accumulus::engine {

CnnImpl::CnnImpl(int64_t in_channels, const std::vector<int64_t>& channels, int64_t classes,
                 bool batch_norm) {
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

torch::Tensor CnnImpl::forward(torch::Tensor x) {
  x = features_->forward(x);
  return head_(x.mean({2, 3}));
}

}  // namespace accumulus::engine
