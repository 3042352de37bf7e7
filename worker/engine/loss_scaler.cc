#include "worker/engine/loss_scaler.h"

#include <torch/torch.h>

namespace accumulus::engine {

void LossScaler::Update(bool found_nonfinite) {
  if (found_nonfinite) {
    scale_ *= config_.backoff_factor;
    good_windows_ = 0;
    ++skipped_;
    return;
  }
  if (++good_windows_ == config_.growth_interval) {
    scale_ *= config_.growth_factor;
    good_windows_ = 0;
  }
}

bool GradientsAreFinite(const std::vector<torch::Tensor>& parameters) {
  // One reduction per tensor, one host sync for all of them.
  std::vector<torch::Tensor> flags;
  for (const auto& p : parameters) {
    if (p.grad().defined()) flags.push_back(torch::isfinite(p.grad()).all());
  }
  return flags.empty() || torch::stack(flags).all().item<bool>();
}

}  // namespace accumulus::engine
