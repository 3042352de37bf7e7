#include "worker/engine/window_accumulator.h"

#include <limits>
#include <optional>

namespace accumulus::engine {

WindowAccumulator::WindowAccumulator(std::vector<torch::Tensor> parameters, Forward forward,
                                     LossKind loss, Normalization normalization,
                                     int64_t nominal_microbatches, double max_grad_norm,
                                     GradientSync* sync)
    : parameters_(std::move(parameters)),
      forward_(std::move(forward)),
      loss_(loss),
      normalization_(normalization),
      nominal_microbatches_(nominal_microbatches),
      max_grad_norm_(max_grad_norm),
      sync_(sync) {}

namespace {

// The scalar a micro-batch differentiates: its sum-reduced loss (exact), or
// the tutorial's mean over its items divided by k; times the loss scale.
// `Factor` is a double in an eager micro-batch and a device scalar in a
// captured one, where the value must be read at replay, not at capture.
template <typename Factor>
torch::Tensor ObjectiveOf(const LossSum& loss, Normalization normalization, const Factor& k,
                          const Factor* scale) {
  torch::Tensor objective = normalization == Normalization::kExact
                                ? loss.sum
                                : loss.sum / (loss.items.to(loss.sum.scalar_type()) * k);
  if (scale != nullptr) objective = objective * *scale;
  return objective;
}

// A micro-batch's outputs in fp32, whatever the forward's precision.
torch::Tensor ForwardOf(const WindowAccumulator::Forward& forward, const torch::Tensor& inputs,
                        Precision precision, c10::DeviceType device) {
  AutocastScope autocast(precision, device);
  return forward(inputs).to(torch::kFloat32);
}

}  // namespace

void WindowAccumulator::AddMicroBatch(const Batch& batch) {
  if (ReadyToCapture(batch)) Capture(batch);
  const MicroBatchLoss loss = graph_ && graph_->Fits(batch) ? Replay(batch) : RunEagerly(batch);
  if (measure_noise_ && microbatches_ == 0 && !several_ranks()) {
    first_sq_norm_ = SquaredGradientNorm(parameters_);
    first_items_ = loss.from_graph ? loss.items.clone() : loss.items;
  }
  // Kept on the device: summed here, read on the host once per window. A
  // graph's outputs are copied before its next replay overwrites them.
  if (loss_sum_.defined()) {
    loss_sum_ = loss_sum_ + loss.sum;
    items_ = items_ + loss.items;
  } else {
    loss_sum_ = loss.from_graph ? loss.sum.clone() : loss.sum;
    items_ = loss.from_graph ? loss.items.clone() : loss.items;
  }
  ++microbatches_;
  samples_ += batch.inputs.size(0);
}

WindowAccumulator::MicroBatchLoss WindowAccumulator::RunEagerly(const Batch& batch) {
  std::optional<PhaseScope> forward(std::in_place, clock_, Phase::kForward);
  const LossSum loss =
      SumLoss(loss_, ForwardOf(forward_, batch.inputs, precision_, device_type_), batch.targets);
  const double k = static_cast<double>(nominal_microbatches_);
  const double scale = scaler_ != nullptr ? scaler_->scale() : 1.0;
  const torch::Tensor objective =
      ObjectiveOf(loss, normalization_, k, scaler_ != nullptr ? &scale : nullptr);
  forward.reset();
  {
    PhaseScope backward(clock_, Phase::kBackward);
    objective.backward();
  }
  if (cuda_graphs_) ++eager_runs_[batch.inputs.sizes().vec()];
  return {loss.sum.detach(), loss.items, false};
}

WindowAccumulator::MicroBatchLoss WindowAccumulator::Replay(const Batch& batch) {
  // The device values the graph reads, rewritten (queued, no sync) only
  // when the host's differ.
  const double k = static_cast<double>(nominal_microbatches_);
  if (k != graph_k_value_) {
    graph_k_.fill_(k);
    graph_k_value_ = k;
  }
  const double scale = scaler_ != nullptr ? scaler_->scale() : 1.0;
  if (scale != graph_scale_value_) {
    graph_scale_.fill_(scale);
    graph_scale_value_ = scale;
  }
  graph_->Load(batch);
  {
    PhaseScope forward(clock_, Phase::kForward);
    graph_->ReplayForward();
  }
  {
    PhaseScope backward(clock_, Phase::kBackward);
    graph_->ReplayBackward();
  }
  ++graph_replays_;
  return {graph_->outputs()[0], graph_->outputs()[1], true};
}

bool WindowAccumulator::ReadyToCapture(const Batch& batch) const {
  if (!cuda_graphs_ || graph_ || microbatches_ != 0 || several_ranks()) return false;
  const auto warm = eager_runs_.find(batch.inputs.sizes().vec());
  return warm != eager_runs_.end() && warm->second >= kGraphWarmupMicroBatches &&
         CanCaptureOn(batch.inputs.device());
}

void WindowAccumulator::Capture(const Batch& batch) {
  // The backward adds into gradients that exist (at a window's start they
  // are freed or zero).
  for (auto& p : parameters_) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
  }
  const auto scalar = torch::TensorOptions().dtype(torch::kFloat32).device(batch.inputs.device());
  graph_k_value_ = static_cast<double>(nominal_microbatches_);
  graph_scale_value_ = scaler_ != nullptr ? scaler_->scale() : 1.0;
  graph_k_ = torch::full({}, graph_k_value_, scalar);
  graph_scale_ = torch::full({}, graph_scale_value_, scalar);
  auto forward = [this](const Batch& b) -> MicroBatchGraph::Forward {
    const LossSum loss =
        SumLoss(loss_, ForwardOf(forward_, b.inputs, precision_, device_type_), b.targets);
    return {
        ObjectiveOf(loss, normalization_, graph_k_, scaler_ != nullptr ? &graph_scale_ : nullptr),
        {loss.sum.detach(), loss.items}};
  };
  try {
    graph_ = std::make_unique<MicroBatchGraph>(batch, forward);
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const c10::Error& e) {
    cuda_graphs_ = false;
    graph_note_ = std::string(
                      "CUDA graphs are off for the rest of this run: capturing a "
                      "micro-batch failed: ") +
                  e.what_without_backtrace();
    return;
  }
  std::string shape;
  for (const int64_t d : batch.inputs.sizes())
    shape += (shape.empty() ? "" : "×") + std::to_string(d);
  graph_note_ = "micro-batches of shape " + shape +
                " now run as CUDA graph replays (one launch for the forward pass, one for the "
                "backward; " +
                std::to_string(graph_->working_set_bytes()) + " bytes of working memory)";
}

WindowResult WindowAccumulator::FinishWindow(bool out_of_memory) {
  WindowResult result;
  result.microbatches = microbatches_;
  result.graph_replays = graph_replays_;
  // The window's counts travel with the gradients: float64 holds integer
  // counts exactly up to 2^53. Reading the device-side sums (and the noise
  // measurement's norms) is the window's one host sync.
  const double scale = scaler_ != nullptr ? scaler_->scale() : 1.0;
  double loss_sum = 0;
  double items = 0;
  SmallBatchNorm small;
  if (loss_sum_.defined()) {
    std::vector<torch::Tensor> device_values{loss_sum_.to(torch::kFloat64), items_};
    const bool first_measured = first_sq_norm_.defined();
    // Several ranks: each rank's own window, before the all-reduce sums it.
    const torch::Tensor rank_sq_norm =
        measure_noise_ && several_ranks() ? SquaredGradientNorm(parameters_) : torch::Tensor();
    if (first_measured) {
      device_values.push_back(first_sq_norm_);
      device_values.push_back(first_items_);
    } else if (rank_sq_norm.defined()) {
      device_values.push_back(rank_sq_norm);
    }
    const torch::Tensor sums = torch::stack(device_values).cpu();
    loss_sum = sums[0].item<double>();
    items = sums[1].item<double>();
    if (first_measured && microbatches_ > 1) {
      small = SmallBatchOf(sums[2].item<double>(), sums[3].item<double>(), 1, scale);
    } else if (rank_sq_norm.defined()) {
      small = SmallBatchOf(sums[2].item<double>(), items, microbatches_, scale);
    }
  }
  // The small batches' norms and 1/size sum over the ranks with the counts.
  torch::Tensor counters =
      torch::tensor({loss_sum, items, static_cast<double>(samples_), out_of_memory ? 1.0 : 0.0,
                     small.measured ? small.sq_norm : 0.0, small.measured ? 1.0 / small.items : 0.0,
                     small.measured ? 1.0 : 0.0},
                    torch::kFloat64);
  if (sync_ != nullptr) sync_->AllReduce(parameters_, counters, &result.sync);
  const auto global = counters.accessor<double, 1>();
  result.loss_items = static_cast<int64_t>(global[1]);
  result.samples = static_cast<int64_t>(global[2]);
  result.loss = result.loss_items > 0 ? global[0] / global[1] : 0;

  torch::NoGradGuard no_grad;
  result.loss_scale = scaler_ != nullptr ? scaler_->scale() : 1.0;
  if (global[3] > 0) {
    result.out_of_memory = true;
    // The retry runs smaller micro-batches: the graph's memory goes back.
    graph_.reset();
    ClearGradients();
    ResetWindow();
    return result;
  }
  if (scaler_ != nullptr) {
    // After the all-reduce every rank sees the same sums, so every rank
    // reaches the same verdict.
    const bool finite = GradientsAreFinite(parameters_);
    scaler_->Update(!finite);
    if (!finite) {
      result.skipped = true;
      result.grad_norm = std::numeric_limits<double>::quiet_NaN();
      ClearGradients();
      ResetWindow();
      return result;
    }
  }
  // exact: the gradient of the mean over all the window's items. The
  // tutorial mode averages over ranks instead, as DDP does. Unscaling is
  // folded into the same single division.
  const double divisor = (normalization_ == Normalization::kExact
                              ? global[1]
                              : static_cast<double>(sync_ ? sync_->world_size() : 1)) *
                         result.loss_scale;
  if (divisor > 0 && divisor != 1.0) {
    for (auto& p : parameters_) {
      if (p.grad().defined()) p.grad().div_(divisor);
    }
  }
  result.grad_norm = GradientNorm(parameters_);
  if (global[6] > 0) {
    // The small batches' mean norm; their size is the harmonic mean, since
    // E|g|² is linear in 1/B.
    result.noise.small_sq_norm = global[4] / global[6];
    result.noise.small_batch = global[6] / global[5];
    result.noise.big_sq_norm = result.grad_norm * result.grad_norm;
    result.noise.big_batch = global[1];
    result.noise_measured = result.noise.small_batch < result.noise.big_batch;
  }
  // torch.nn.utils.clip_grad_norm_'s rule, applied once to the whole window.
  const double clip_coef = max_grad_norm_ / (result.grad_norm + 1e-6);
  if (max_grad_norm_ > 0 && clip_coef < 1.0) {
    for (auto& p : parameters_) {
      if (p.grad().defined()) p.grad().mul_(clip_coef);
    }
    result.clipped = true;
  }
  ResetWindow();
  return result;
}

void WindowAccumulator::DiscardWindow() {
  ResetWindow();
  ClearGradients();
}

void WindowAccumulator::ClearGradients() {
  if (!graph_) {
    for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
    return;
  }
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters_) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  torch::NoGradGuard no_grad;
  at::_foreach_zero_(grads);
}

void WindowAccumulator::ResetWindow() {
  microbatches_ = samples_ = graph_replays_ = 0;
  items_ = torch::Tensor();
  loss_sum_ = torch::Tensor();
  first_sq_norm_ = torch::Tensor();
  first_items_ = torch::Tensor();
}

bool WindowAccumulator::several_ranks() const {
  return sync_ != nullptr && sync_->world_size() > 1;
}

// The gradient in .grad covers `microbatches` micro-batches of `items`
// items in all, scaled by `scale`; its squared norm is `sq_norm`. Under
// exact normalization it is the sum over the items; under the tutorial's
// per-micro-batch mean, 1/k of the sum of micro-batch means (their mean,
// for micro-batches of equal size).
WindowAccumulator::SmallBatchNorm WindowAccumulator::SmallBatchOf(double sq_norm, double items,
                                                                  int64_t microbatches,
                                                                  double scale) const {
  SmallBatchNorm small;
  if (!(items > 0)) return small;
  const double to_mean = normalization_ == Normalization::kExact
                             ? 1.0 / (items * scale)
                             : static_cast<double>(nominal_microbatches_) /
                                   (static_cast<double>(microbatches) * scale);
  small.measured = true;
  small.items = items;
  small.sq_norm = sq_norm * to_mean * to_mean;
  return small;
}

torch::Tensor SquaredGradientNorm(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad().detach());
  }
  if (grads.empty()) return torch::Tensor();
  if (grads.front().is_cuda()) {
    // Four launches whatever the model: one fused norm kernel (and its
    // reduction) for all of them, in float64, then the stack's dot with
    // itself.
    const torch::Tensor norms = torch::stack(at::_foreach_norm(grads, 2, torch::kFloat64));
    return norms.dot(norms);
  }
  // On the CPU a float64 norm converts element by element, ten times slower
  // than each gradient's BLAS dot with itself (the mlp's 1.9 M gradients:
  // the measurement took 1.4 ms per window with it, 0.17 ms with the dots;
  // bench/results/noise-overhead-2026-12-05*). The float32 dots' relative
  // error (~4e-7 there) is far below the estimator's own noise; they are
  // summed in float64.
  std::vector<torch::Tensor> squares;
  squares.reserve(grads.size());
  for (const torch::Tensor& g : grads) {
    const torch::Tensor flat = g.reshape({-1});
    squares.push_back(flat.dot(flat).to(torch::kFloat64));
  }
  return torch::stack(squares).sum();
}

double GradientNorm(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : parameters) {
    if (p.grad().defined()) norms.push_back(p.grad().detach().norm(2));
  }
  if (norms.empty()) return 0;
  return torch::stack(norms).norm(2).item<double>();
}

}  // namespace accumulus::engine
