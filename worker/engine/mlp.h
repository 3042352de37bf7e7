// The built-in multi-layer perceptron: Linear → ReLU blocks and a Linear head.
// Activation checkpointing is offered for uniformity but saves nothing here:
// what a Linear → ReLU block keeps for backward is exactly its input and its
// output, the tensors a checkpoint keeps too (docs/accumulation.md).
#pragma once

#include <torch/torch.h>

#include <vector>

namespace accumulus::engine {

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t inputs, const std::vector<int64_t>& hidden, int64_t outputs,
          bool checkpoint_activations = false);
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::ModuleList layers_;
  bool checkpoint_activations_;
};
TORCH_MODULE(Mlp);

}  // namespace accumulus::engine
