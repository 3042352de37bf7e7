// One accumulation window: k micro-batches of forward + backward whose
// gradients add up in .grad, then one normalization, one norm measurement and
// at most one clip. The optimizer step is the caller's.
//
// With Normalization::kExact every micro-batch contributes its sum-reduced
// loss and the gradients are divided once by the window's item count, so k
// micro-batches give the gradient of one batch of all the window's items —
// also for a short last window, whose count is simply smaller.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/noise_scale.h"
#include "worker/engine/autocast_scope.h"
#include "worker/engine/dataset.h"
#include "worker/engine/gradient_sync.h"
#include "worker/engine/loss.h"
#include "worker/engine/loss_scaler.h"
#include "worker/engine/micro_batch_graph.h"
#include "worker/engine/phase_clock.h"
#include "worker/engine/train_config.h"

namespace accumulus::engine {

struct WindowResult {
  int64_t microbatches = 0;  // this rank's
  int64_t samples = 0;       // all ranks'
  int64_t loss_items = 0;    // all ranks'
  double loss = 0;           // mean over all ranks' items of the window
  double grad_norm = 0;      // total L2 norm after normalization, before clipping
  bool clipped = false;
  SyncStats sync;  // this rank's all-reduce work
  // Loss scaling: the scale this window used, and whether its gradients
  // overflowed (the caller must then skip the optimizer step; the gradients
  // are left undefined).
  double loss_scale = 1.0;
  bool skipped = false;
  // Some rank ran out of memory in this window: nothing was learned from it
  // (gradients dropped) and it must run again with a smaller micro-batch.
  bool out_of_memory = false;
  // The gradient noise measurement (set_measure_noise): the squared norms
  // of the mean gradient of a small batch and of the window, unscaled and
  // before clipping. noise_measured is false where the window has no small
  // batch (one micro-batch on one rank) or was skipped.
  bool noise_measured = false;
  NoiseSample noise;
  // This rank's micro-batches that ran as CUDA graph replays.
  int64_t graph_replays = 0;
};

class WindowAccumulator {
 public:
  using Forward = std::function<torch::Tensor(const torch::Tensor&)>;

  // `nominal_microbatches` is k, used only by kPerMicrobatchMean (which, as
  // the tutorials do, divides by k even in a short window). `sync` joins the
  // ranks of a data-parallel job (null for one rank; not owned).
  WindowAccumulator(std::vector<torch::Tensor> parameters, Forward forward, LossKind loss,
                    Normalization normalization, int64_t nominal_microbatches, double max_grad_norm,
                    GradientSync* sync = nullptr);

  // Sets k for the next window (the accumulation may ramp between windows).
  void set_nominal_microbatches(int64_t k) { nominal_microbatches_ = k; }
  // Runs forward passes under autocast (default: fp32, no autocast).
  void set_precision(Precision precision, c10::DeviceType device) {
    precision_ = precision;
    device_type_ = device;
    graph_.reset();
  }
  // Scales every loss by scaler->scale() and unscales once per window (not
  // owned; null: no loss scaling).
  void set_loss_scaler(LossScaler* scaler) {
    scaler_ = scaler;
    graph_.reset();
  }
  // Times each micro-batch's forward and backward (not owned; null: not
  // timed).
  void set_phase_clock(PhaseClock* clock) { clock_ = clock; }
  // Measures the gradient noise of every window (WindowResult::noise). On
  // one rank the small batch is the first micro-batch (its gradient's
  // squared norm is taken on the device right after its backward); on
  // several, each rank's window before the all-reduce. The norms travel
  // with the window's counts, so it adds no host sync.
  void set_measure_noise(bool measure) { measure_noise_ = measure; }
  // Runs micro-batches as CUDA graph replays where it can
  // (micro_batch_graph.h): on one rank on a CUDA device, on a stream other
  // than the default one, for micro-batches of the shapes that
  // kGraphWarmupMicroBatches eager ones had before. The graph is captured
  // at a window's first micro-batch; one of other shapes (a short last
  // window's) runs eagerly. The parameters must all receive gradients:
  // from the capture on, every one has a gradient, zeroed between windows.
  // Off by default.
  void set_cuda_graphs(bool enabled) {
    cuda_graphs_ = enabled;
    if (!enabled) graph_.reset();
  }
  static constexpr int64_t kGraphWarmupMicroBatches = 2;

  // Forward and backward of one micro-batch. No communication, no division.
  void AddMicroBatch(const Batch& batch);

  // Ends the window: sums gradients and counts across ranks (one all-reduce
  // pass), normalizes by the global item count, measures the norm, clips
  // once if a max norm is set, and resets the window's counters. The
  // gradients stay in .grad for the optimizer. `out_of_memory` says this
  // rank could not finish its micro-batches; the flag travels with the
  // counts, so every rank learns it in the same all-reduce.
  WindowResult FinishWindow(bool out_of_memory = false);

  // Ends the window without a trace: counters reset, gradients dropped (the
  // micro-batches only measured something).
  void DiscardWindow();

  // Between windows (after the optimizer step): frees every gradient, or,
  // while a CUDA graph lives that adds into them, zeroes them in place.
  void ClearGradients();

  // The bytes a replay of the live CUDA graph uses beyond what is allocated
  // outside it (0: none). The caching allocator counts them only while the
  // capture runs, so a window's peak is its start plus these.
  int64_t graph_working_set_bytes() const { return graph_ ? graph_->working_set_bytes() : 0; }
  // What changed about CUDA graphs since the last call ("" if nothing): a
  // capture, or why they are off, for the job's log.
  std::string TakeGraphNote() { return std::exchange(graph_note_, std::string()); }

 private:
  // One micro-batch's loss sum and item count, on the device. From a graph
  // they are its output tensors, overwritten by its next replay.
  struct MicroBatchLoss {
    torch::Tensor sum;
    torch::Tensor items;
    bool from_graph = false;
  };
  MicroBatchLoss RunEagerly(const Batch& batch);
  MicroBatchLoss Replay(const Batch& batch);
  bool ReadyToCapture(const Batch& batch) const;
  // Captures the graph for `batch`'s shapes; rethrows an out-of-memory (the
  // window is retried smaller), turns graphs off on any other failure.
  void Capture(const Batch& batch);
  void ResetWindow();
  bool several_ranks() const;
  // A small batch's mean-gradient squared norm, for the noise scale.
  struct SmallBatchNorm {
    bool measured = false;
    double sq_norm = 0;
    double items = 0;
  };
  SmallBatchNorm SmallBatchOf(double sq_norm, double items, int64_t microbatches,
                              double scale) const;

  std::vector<torch::Tensor> parameters_;
  Forward forward_;
  LossKind loss_;
  Normalization normalization_;
  int64_t nominal_microbatches_;
  double max_grad_norm_;
  GradientSync* sync_;
  Precision precision_ = Precision::kFp32;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  LossScaler* scaler_ = nullptr;
  PhaseClock* clock_ = nullptr;
  bool measure_noise_ = false;
  bool cuda_graphs_ = false;

  // CUDA graphs: the live one, the eager micro-batches run of each input
  // shape (the warm-up), the device values a replay reads (k and the loss
  // scale, with the host's copy of what they hold), and news for the log.
  std::unique_ptr<MicroBatchGraph> graph_;
  std::map<std::vector<int64_t>, int64_t> eager_runs_;
  torch::Tensor graph_k_;
  torch::Tensor graph_scale_;
  double graph_k_value_ = 0;
  double graph_scale_value_ = 0;
  std::string graph_note_;

  // The current window.
  int64_t microbatches_ = 0;
  int64_t samples_ = 0;
  int64_t graph_replays_ = 0;
  torch::Tensor items_;     // float64; with loss_sum_, read once per window
  torch::Tensor loss_sum_;  // detached; read once per window (one device sync)
  // One rank: the first micro-batch's squared gradient norm and items
  // (float64, on the device).
  torch::Tensor first_sq_norm_;
  torch::Tensor first_items_;
};

// The total L2 norm of the parameters' gradients (undefined ones skipped).
double GradientNorm(const std::vector<torch::Tensor>& parameters);

// The squared total L2 norm of the gradients as a float64 scalar on their
// device (undefined ones skipped; an undefined tensor when there are none):
// no host sync.
torch::Tensor SquaredGradientNorm(const std::vector<torch::Tensor>& parameters);

}  // namespace accumulus::engine
