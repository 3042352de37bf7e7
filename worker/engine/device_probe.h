// The CUDA devices this process's LibTorch can use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accumulus::engine {

struct CudaDevice {
  int index = 0;
  int64_t memory_bytes = 0;  // 0 when the CUDA runtime could not be asked
  std::string name;
};

// Empty when LibTorch was built without CUDA or no GPU is visible.
std::vector<CudaDevice> ProbeCudaDevices();

}  // namespace accumulus::engine
