// The built-in multi-layer perceptron: Linear → ReLU blocks and a Linear head.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace accumulus::engine {

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::ModuleList layers_;
};
TORCH_MODULE(Mlp);

}  // namespace accumulus::engine
