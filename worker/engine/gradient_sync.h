// How the ranks of a data-parallel job agree on one window's gradient: one
// all-reduce pass per window, after the last micro-batch (DDP's no_sync()
// behaviour), never per micro-batch.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace accumulus::engine {

struct SyncStats {
  int64_t allreduce_calls = 0;
  int64_t bytes = 0;  // payload of the reduced tensors
  double seconds = 0;
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // Sums every parameter's .grad and `counters` (a small float64 tensor of
  // the window's loss sum and counts) over all ranks, in place. A rank whose
  // share of a short window was empty has undefined gradients: they count as
  // zeros and come back defined, so every rank steps the same parameters.
  // Throws (c10::Error) when a peer is gone past the collective timeout.
  virtual void AllReduce(const std::vector<torch::Tensor>& parameters, torch::Tensor& counters,
                         SyncStats* stats) = 0;

  // Makes every rank's tensors equal to rank 0's (the initial parameters).
  virtual void Broadcast(const std::vector<torch::Tensor>& tensors) = 0;

  // The smallest of every rank's `value` (ranks agreeing on a micro-batch).
  virtual int64_t MinAcrossRanks(int64_t value) = 0;
};

}  // namespace accumulus::engine
