#include "worker/engine/mlp.h"

namespace accumulus::engine {

MlpImpl::MlpImpl(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs) {
  int64_t width = inputs;
  for (int64_t h : hidden) {
    layers_->push_back(torch::nn::Linear(width, h));
    width = h;
  }
  layers_->push_back(torch::nn::Linear(width, outputs));
  register_module("layers", layers_);
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  x = x.flatten(1);  // images and other shaped samples as feature vectors
  const size_t n = layers_->size();
  for (size_t i = 0; i < n; ++i) {
    x = layers_[i]->as<torch::nn::Linear>()->forward(x);
    if (i + 1 < n) x = torch::relu(x);
  }
  return x;
}

}  // namespace accumulus::engine
