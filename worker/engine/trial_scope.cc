#include "worker/engine/trial_scope.h"

#include "worker/engine/cpu_rng.h"

namespace accumulus::engine {

TrialScope::TrialScope(Model& model) : model_(model), rng_(CpuRngState()) {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& b : model_.Buffers()) buffers_.push_back(b.detach().clone());
}

TrialScope::~TrialScope() {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> buffers = model_.Buffers();
  for (size_t i = 0; i < buffers.size() && i < buffers_.size(); ++i) buffers[i].copy_(buffers_[i]);
  RestoreCpuRng(rng_);
  model_.ZeroGrad();
}

}  // namespace accumulus::engine
