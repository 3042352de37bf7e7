// Data sets the engine trains on, and the micro-batches drawn from them.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The samples at `indices`, in that order, as one batch (a copy: a
  // micro-batch's tensors die with the micro-batch).
  virtual Batch Gather(const torch::Tensor& indices) const = 0;
};

// A seeded synthetic data set held in memory. Classification: features
// ~ N(0, 1), label = argmax of a random linear teacher. Regression: targets =
// a random linear teacher plus Gaussian noise of the configured std.
class SyntheticDataset final : public Dataset {
 public:
  explicit SyntheticDataset(const DataConfig& config);
  int64_t size() const override { return inputs_.size(0); }
  Batch Gather(const torch::Tensor& indices) const override;

 private:
  torch::Tensor inputs_;
  torch::Tensor targets_;
};

}  // namespace accumulus::engine
