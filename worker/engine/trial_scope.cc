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

std::vector<ThreadTrial> MeasureThreadSplitsOn(const std::vector<ThreadSplit>& candidates,
                                               Model& model, WindowAccumulator& window,
                                               const Batch& batch) {
  TrialScope untouched(model);
  try {
    std::vector<ThreadTrial> trials =
        MeasureThreadSplits(candidates, batch.inputs.size(0), [&] { window.AddMicroBatch(batch); });
    window.DiscardWindow();
    return trials;
  } catch (...) {
    window.DiscardWindow();
    throw;
  }
}

}  // namespace accumulus::engine
