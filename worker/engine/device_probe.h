// The CUDA devices this process's LibTorch can use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accumulus::engine {

struct CudaDevice {
  int index = 0;
  int64_t memory_bytes = 0;  // the device's total memory
  std::string name;          // the model, e.g. "NVIDIA H200"
};

// Empty when this build has no CUDA or no GPU is visible.
std::vector<CudaDevice> ProbeCudaDevices();

}  // namespace accumulus::engine
