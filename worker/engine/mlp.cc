#include "worker/engine/mlp.h"

#include "worker/engine/activation_checkpoint.h"

namespace accumulus::engine {

MlpImpl::MlpImpl(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs,
                 bool checkpoint_activations)
    : checkpoint_activations_(checkpoint_activations) {
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
  for (size_t i = 0; i + 1 < n; ++i) {
    const auto linear = layers_->ptr<torch::nn::LinearImpl>(i);
    const auto block = [linear](const torch::Tensor& t) { return torch::relu(linear->forward(t)); };
    x = checkpoint_activations_ ? Checkpoint({block, {linear}}, x) : block(x);
  }
  return layers_[n - 1]->as<torch::nn::Linear>()->forward(x);
}

}  // namespace accumulus::engine
