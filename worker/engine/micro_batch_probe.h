// micro_batch: auto — finding the largest micro-batch that fits a memory
// budget, by measuring, not guessing: a real forward + backward of the job's
// model on the job's data for each candidate.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "worker/engine/dataset.h"
#include "worker/engine/events.h"
#include "worker/engine/loss.h"
#include "worker/engine/memory_meter.h"
#include "worker/engine/model_factory.h"

namespace accumulus::engine {

struct ProbeRequest {
  Model* model = nullptr;
  LossKind loss = LossKind::kCrossEntropy;
  const Dataset* data = nullptr;
  torch::Device device = torch::kCPU;
  MemoryMeter* memory = nullptr;
  // Samples per rank and window: candidates are its divisors.
  int64_t per_rank_batch = 0;
  // Memory the optimizer will add at its first step (momentum, Adam moments).
  int64_t optimizer_state_bytes = 0;
  int64_t budget_bytes = 0;
  double margin = 0.1;
};

struct ProbeResult {
  int64_t micro_batch = 0;  // the largest that fits; 0 when none does
  std::vector<MicroBatchProbe> table;
};

// Tries the divisors of per_rank_batch from the largest down and stops at the
// first whose measured peak (of one micro-batch, or two when the window
// accumulates) plus the optimizer state fits under budget × (1 - margin).
// Leaves no gradients behind and the model's buffers and the CPU generator
// as they were.
ProbeResult ProbeMicroBatch(const ProbeRequest& request);

// Bytes of optimizer state for these parameters: one buffer per parameter for
// SGD with momentum, two for AdamW, none for plain SGD.
int64_t OptimizerStateBytes(const OptimizerConfig& optimizer,
                            const std::vector<torch::Tensor>& parameters);

}  // namespace accumulus::engine
