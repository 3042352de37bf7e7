// Dynamic loss scaling with the contract of PyTorch's GradScaler, applied
// per accumulation window: the scale is constant within a window; the
// gradients are unscaled once, after the last micro-batch; a window with an
// inf/NaN gradient is skipped and the scale backs off; after
// `growth_interval` good windows in a row the scale grows.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace accumulus::engine {

struct LossScalerConfig {
  double initial_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config)
      : config_(config), scale_(config.initial_scale) {}

  // The factor every micro-batch's loss is multiplied by in this window.
  double scale() const { return scale_; }

  // Called once per window with whether its gradients had an inf or NaN.
  void Update(bool found_nonfinite);

  int64_t skipped_windows() const { return skipped_; }

  // What a checkpoint keeps, so a resumed run scales as it would have.
  struct State {
    double scale = 0;
    int64_t good_windows = 0;
    int64_t skipped = 0;
  };
  State state() const { return {scale_, good_windows_, skipped_}; }
  void Restore(const State& s) {
    scale_ = s.scale;
    good_windows_ = s.good_windows;
    skipped_ = s.skipped;
  }

 private:
  const LossScalerConfig config_;
  double scale_;
  int64_t good_windows_ = 0;
  int64_t skipped_ = 0;
};

// True when every defined gradient of `parameters` is finite.
bool GradientsAreFinite(const std::vector<torch::Tensor>& parameters);

}  // namespace accumulus::engine
