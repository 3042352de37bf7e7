#include "worker/engine/micro_batch_probe.h"

#include "common/batch_arithmetic.h"
#include "worker/engine/trial_scope.h"

namespace accumulus::engine {

int64_t OptimizerStateBytes(const OptimizerConfig& optimizer,
                            const std::vector<torch::Tensor>& parameters) {
  int64_t bytes = 0;
  for (const auto& p : parameters) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  if (optimizer.kind == OptimizerKind::kAdamW) return 2 * bytes;
  return optimizer.momentum > 0 ? bytes : 0;
}

ProbeResult ProbeMicroBatch(const ProbeRequest& r) {
  ProbeResult result;
  const auto limit = static_cast<int64_t>(static_cast<double>(r.budget_bytes) * (1.0 - r.margin));
  const int64_t samples = std::min(r.per_rank_batch, r.data->size());
  // The probes' forwards must not move BatchNorm's running statistics (nor
  // a dropout's generator): training starts from the state it would have
  // had with the micro-batch given.
  TrialScope untouched(*r.model);
  for (int64_t m = r.per_rank_batch; m >= 1; m = LargestDivisorAtMost(r.per_rank_batch, m - 1)) {
    MicroBatchProbe probe;
    probe.micro_batch = m;
    r.memory->ResetPeak();
    try {
      // Two micro-batches when the window has several: the second backward
      // adds into existing .grad tensors through fresh temporaries, which is
      // the peak accumulation really reaches.
      const int64_t passes = m < r.per_rank_batch ? 2 : 1;
      for (int64_t pass = 0; pass < passes; ++pass) {
        const Batch batch = r.data->Gather(torch::arange(std::min(m, samples)));
        const torch::Tensor outputs = r.model->Forward(batch.inputs.to(r.device));
        SumLoss(r.loss, outputs, batch.targets.to(r.device)).sum.backward();
      }
      probe.peak_bytes = r.memory->peak_bytes() + r.optimizer_state_bytes;
      probe.fits = r.budget_bytes <= 0 || probe.peak_bytes <= limit;
    } catch (const c10::OutOfMemoryError&) {
      probe.peak_bytes = r.budget_bytes;
      probe.fits = false;
    }
    r.model->ZeroGrad();
    result.table.push_back(probe);
    if (probe.fits) {
      result.micro_batch = m;
      return result;
    }
    if (m == 1) break;
  }
  return result;  // micro_batch 0: nothing fits
}

}  // namespace accumulus::engine
