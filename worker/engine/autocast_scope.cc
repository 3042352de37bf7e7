#include "worker/engine/autocast_scope.h"

#include <ATen/autocast_mode.h>

namespace accumulus::engine {

Status CheckPrecision(Precision precision, c10::DeviceType device) {
  if (precision == Precision::kFp16 && device != c10::DeviceType::CUDA) {
    return Status::InvalidArgument(
        "precision \"fp16\" needs a CUDA device (on the CPU use \"bf16\")");
  }
  return Status::Ok();
}

AutocastScope::AutocastScope(Precision precision, c10::DeviceType device) {
  if (precision == Precision::kFp32) return;
  const at::ScalarType dtype = precision == Precision::kBf16 ? at::kBFloat16 : at::kHalf;
  active_ = true;
  device_ = device;
  at::autocast::set_autocast_dtype(device_, dtype);
  at::autocast::set_autocast_enabled(device_, true);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  at::autocast::set_autocast_enabled(device_, false);
  // Cached casts of the weights belong to this forward pass only.
  at::autocast::clear_cache();
}

}  // namespace accumulus::engine
