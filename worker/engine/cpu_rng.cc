#include "worker/engine/cpu_rng.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

namespace accumulus::engine {

torch::Tensor CpuRngState() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void RestoreCpuRng(const torch::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace accumulus::engine
