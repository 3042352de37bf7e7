#include "worker/engine/dataset.h"

#include <ATen/CPUGeneratorImpl.h>

namespace accumulus::engine {

SyntheticDataset::SyntheticDataset(const DataConfig& config) {
  // A private generator: the data must not depend on what else drew random
  // numbers in this process (model initialization uses the global one).
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(config.seed);
  inputs_ = at::randn({config.samples, config.features}, gen);
  const torch::Tensor teacher = at::randn({config.features, config.outputs}, gen);
  const torch::Tensor scores = inputs_.matmul(teacher);
  if (config.task == "classification") {
    targets_ = scores.argmax(/*dim=*/1);
  } else {
    targets_ = scores + config.noise * at::randn(scores.sizes(), gen);
  }
}

Batch SyntheticDataset::Gather(const torch::Tensor& indices) const {
  return {inputs_.index_select(0, indices), targets_.index_select(0, indices)};
}

}  // namespace accumulus::engine
