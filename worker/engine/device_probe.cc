#include "worker/engine/device_probe.h"

#ifdef ACCUMULUS_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace accumulus::engine {

std::vector<CudaDevice> ProbeCudaDevices() {
  std::vector<CudaDevice> devices;
#ifdef ACCUMULUS_WITH_CUDA
  // device_count() is 0, not an error, where the driver or the GPU is absent.
  const int count = static_cast<int>(c10::cuda::device_count());
  for (int i = 0; i < count; ++i) {
    const cudaDeviceProp* properties =
        at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    CudaDevice d;
    d.index = i;
    d.name = properties->name;
    d.memory_bytes = static_cast<int64_t>(properties->totalGlobalMem);
    devices.push_back(d);
  }
#endif
  return devices;
}

}  // namespace accumulus::engine
