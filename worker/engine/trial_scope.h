// Forward and backward passes that only measure something (the micro-batch
// probe's memory, the thread split's speed) must leave the run exactly as
// they found it, or a run that measures would train differently from one
// that does not: BatchNorm's running statistics, the CPU generator a dropout
// draws from, and the gradients.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "worker/engine/model_factory.h"

namespace accumulus::engine {

// Snapshots the model's buffers and the CPU generator; on destruction puts
// them back and drops the gradients the passes left.
class TrialScope {
 public:
  explicit TrialScope(Model& model);
  ~TrialScope();
  TrialScope(const TrialScope&) = delete;
  TrialScope& operator=(const TrialScope&) = delete;

 private:
  Model& model_;
  std::vector<torch::Tensor> buffers_;
  torch::Tensor rng_;
};

}  // namespace accumulus::engine
