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

void WindowAccumulator::AddMicroBatch(const Batch& batch) {
  std::optional<PhaseScope> forward(std::in_place, clock_, Phase::kForward);
  torch::Tensor outputs;
  {
    AutocastScope autocast(precision_, device_type_);
    outputs = forward_(batch.inputs);
  }
  // The loss in fp32 whatever the forward's precision.
  const LossSum loss = SumLoss(loss_, outputs.to(torch::kFloat32), batch.targets);
  torch::Tensor objective = normalization_ == Normalization::kExact
                                ? loss.sum
                                : loss.sum / (loss.items.to(loss.sum.scalar_type()) *
                                              static_cast<double>(nominal_microbatches_));
  if (scaler_ != nullptr) objective = objective * scaler_->scale();
  forward.reset();
  {
    PhaseScope backward(clock_, Phase::kBackward);
    objective.backward();
  }
  if (measure_noise_ && microbatches_ == 0 && !several_ranks()) {
    first_sq_norm_ = SquaredGradientNorm(parameters_);
    first_items_ = loss.items;
  }
  // Kept on the device: summed here, read on the host once per window.
  loss_sum_ = loss_sum_.defined() ? loss_sum_ + loss.sum.detach() : loss.sum.detach();
  items_ = items_.defined() ? items_ + loss.items : loss.items;
  ++microbatches_;
  samples_ += batch.inputs.size(0);
}

WindowResult WindowAccumulator::FinishWindow(bool out_of_memory) {
  WindowResult result;
  result.microbatches = microbatches_;
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
    for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
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
      for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
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
  for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
}

void WindowAccumulator::ResetWindow() {
  microbatches_ = samples_ = 0;
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
  // Four launches on CUDA whatever the model: one fused norm kernel (and its
  // reduction) for all of them, in float64, then the stack's dot with itself.
  const torch::Tensor norms = torch::stack(at::_foreach_norm(grads, 2, torch::kFloat64));
  return norms.dot(norms);
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
