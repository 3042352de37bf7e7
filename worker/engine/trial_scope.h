// Forward and backward passes that only measure something (the micro-batch
// probe's memory, the thread split's speed) must leave the run exactly as
// they found it, or a run that measures would train differently from one
// that does not: BatchNorm's running statistics, the CPU generator a dropout
// draws from, and the gradients.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "worker/engine/dataset.h"
#include "worker/engine/model_factory.h"
#include "worker/engine/thread_split.h"
#include "worker/engine/window_accumulator.h"

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

// MeasureThreadSplits on the real thing: forward + backward of `batch`
// through `window` (its precision, loss scaling and loss), inside a
// TrialScope, the window discarded after. What a trainer measures, and what
// the benchmarks measure to run on the same split.
std::vector<ThreadTrial> MeasureThreadSplitsOn(const std::vector<ThreadSplit>& candidates,
                                               Model& model, WindowAccumulator& window,
                                               const Batch& batch);

}  // namespace accumulus::engine
