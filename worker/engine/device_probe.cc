#include "worker/engine/device_probe.h"

#include <dlfcn.h>
#include <torch/cuda.h>

namespace accumulus::engine {

std::vector<CudaDevice> ProbeCudaDevices() {
  std::vector<CudaDevice> devices;
  const int count = static_cast<int>(torch::cuda::device_count());
  // The CUDA runtime's C API, looked up at run time so this file builds
  // against a CPU-only LibTorch too.
  using SetDevice = int (*)(int);
  using MemGetInfo = int (*)(size_t*, size_t*);
  auto set_device = reinterpret_cast<SetDevice>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
  auto mem_get_info = reinterpret_cast<MemGetInfo>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
  for (int i = 0; i < count; ++i) {
    CudaDevice d;
    d.index = i;
    d.name = "cuda:" + std::to_string(i);
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    if (set_device && mem_get_info && set_device(i) == 0 &&
        mem_get_info(&free_bytes, &total_bytes) == 0) {
      d.memory_bytes = static_cast<int64_t>(total_bytes);
    }
    devices.push_back(d);
  }
  return devices;
}

}  // namespace accumulus::engine
