// Mixed precision for a forward pass: LibTorch autocast to bf16 (CPU or
// CUDA) or fp16 (CUDA), enabled for the scope's lifetime.
#pragma once

#include <c10/core/DeviceType.h>

#include "common/status.h"

namespace accumulus::engine {

enum class Precision { kFp32, kBf16, kFp16 };

// OK, or why `precision` cannot run on `device` (fp16 needs CUDA: on the CPU
// it has neither fast kernels nor the loss scaling it needs from us).
Status CheckPrecision(Precision precision, c10::DeviceType device);

class AutocastScope {
 public:
  AutocastScope(Precision precision, c10::DeviceType device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
};

}  // namespace accumulus::engine
