#include "worker/engine/autocast_scope.h"

#include <ATen/autocast_mode.h>

namespace accumulus::engine {

Status CheckPrecision(Precision precision, c10::DeviceType device) {
  if (precision == Precision::kFp16 && device != c10::DeviceType::CUDA) {
    return Status::InvalidArgument(
        "precision \"fp16\" needs a CUDA device (LibTorch's CPU autocast supports bf16 only)");
  }
  return Status::Ok();
}

AutocastScope::AutocastScope(Precision precision, c10::DeviceType device) {
  if (precision == Precision::kFp32) return;
  const at::ScalarType dtype = precision == Precision::kBf16 ? at::kBFloat16 : at::kHalf;
  active_ = true;
  cpu_ = device == c10::DeviceType::CPU;
  if (cpu_) {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(true);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
  }
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (cpu_) {
    at::autocast::set_cpu_enabled(false);
  } else {
    at::autocast::set_enabled(false);
  }
  // Cached casts of the weights belong to this forward pass only.
  at::autocast::clear_cache();
}

}  // namespace accumulus::engine
