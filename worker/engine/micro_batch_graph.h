// A micro-batch's forward pass (with its loss) and its backward pass,
// captured once as two CUDA graphs and replayed for every later micro-batch
// of the same shapes.
//
// At small micro-batches the GPU waits on the host: issuing a micro-batch's
// few hundred kernels through ATen's dispatcher takes longer than running
// them (bench/results/gpu-time-*.md). A replay issues them with one launch.
//
// What a replay relies on, and how the accumulator keeps to it:
// - Fixed addresses. The micro-batch is copied into the graph's own input
//   tensors before each replay; the loss sum and item count a replay leaves
//   are the graph's own tensors, read before the next replay. The backward
//   adds into .grad in place, so every gradient must exist (zeros, at least)
//   before the capture and must never be replaced while the graph lives:
//   gradients are zeroed between windows, not freed.
// - Nothing the host decides per micro-batch. Values that change between
//   replays (the loss scale, k) are device tensors the graph reads, written
//   by the caller before a replay.
// - The same stream. Captures need a stream other than the legacy default
//   one, and per-stream state made lazily on first use (cuBLAS workspaces)
//   must exist before the capture rather than inside its memory pool: the
//   trainer runs on one TrainingStream from first to last, and captures
//   after eager micro-batches warmed it.
//
// The forward and backward graphs share one memory pool (they always replay
// in the order they were captured), so replaying them holds what one eager
// micro-batch holds at its peak: working_set_bytes.
#pragma once

#include <c10/core/StreamGuard.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "worker/engine/dataset.h"

namespace accumulus::engine {

// Makes a stream from LibTorch's pool current on a CUDA device for as long
// as it lives (CPU: does nothing), so that everything a training run queues
// is ordered on one stream that CUDA graphs can be captured on.
class TrainingStream {
 public:
  explicit TrainingStream(const torch::Device& device);
  TrainingStream(const TrainingStream&) = delete;
  TrainingStream& operator=(const TrainingStream&) = delete;

 private:
  std::optional<c10::StreamGuard> guard_;
};

// True where a micro-batch can be captured now: a CUDA build, and the
// current stream of `device` is not the legacy default stream.
bool CanCaptureOn(const torch::Device& device);

class MicroBatchGraph {
 public:
  // One micro-batch's forward pass from `batch`: the scalar to
  // differentiate, and the tensors (detached) a replay leaves behind.
  struct Forward {
    torch::Tensor objective;
    std::vector<torch::Tensor> outputs;
  };
  using ForwardFn = std::function<Forward(const Batch& batch)>;

  // Captures `forward` on tensors shaped as `batch`, then the backward of
  // its objective, on the current stream. Nothing runs: Load and the two
  // replays do. Throws what the capture throws (c10::OutOfMemoryError among
  // others), with the capture ended and its memory released.
  MicroBatchGraph(const Batch& batch, const ForwardFn& forward);
  ~MicroBatchGraph();
  MicroBatchGraph(const MicroBatchGraph&) = delete;
  MicroBatchGraph& operator=(const MicroBatchGraph&) = delete;

  // Whether `batch` has the captured shapes, dtypes and device.
  bool Fits(const Batch& batch) const;
  // Copies `batch` into the graph's inputs (queued on the stream).
  void Load(const Batch& batch);
  void ReplayForward();
  void ReplayBackward();
  // What the forward's `outputs` were, as of the last replay.
  const std::vector<torch::Tensor>& outputs() const { return outputs_; }
  // The allocated bytes the capture added at its peak: what a replay uses
  // on top of what was allocated before it.
  int64_t working_set_bytes() const { return working_set_bytes_; }

 private:
  struct Graphs;  // the forward's and the backward's (CUDA builds only)

  Batch inputs_;
  std::vector<torch::Tensor> outputs_;
  int64_t working_set_bytes_ = 0;
  std::unique_ptr<Graphs> graphs_;
};

}  // namespace accumulus::engine
