#include "worker/engine/memory_meter.h"

#include <unistd.h>

#include <fstream>

#include "worker/engine/tracking_allocator.h"

#ifdef ACCUMULUS_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace accumulus::engine {
namespace {

class CpuMemoryMeter final : public MemoryMeter {
 public:
  CpuMemoryMeter() : allocator_(TrackingCpuAllocator::Install()) {}
  int64_t current_bytes() const override { return allocator_->current_bytes(); }
  int64_t peak_bytes() const override { return allocator_->peak_bytes(); }
  void ResetPeak() override { allocator_->ResetPeak(); }
  void set_limit_bytes(int64_t bytes) override { allocator_->set_limit_bytes(bytes); }

 private:
  TrackingCpuAllocator* allocator_;
};

#ifdef ACCUMULUS_WITH_CUDA
class CudaMemoryMeter final : public MemoryMeter {
 public:
  explicit CudaMemoryMeter(c10::DeviceIndex device) : device_(device) {}
  int64_t current_bytes() const override { return Stat().current; }
  int64_t peak_bytes() const override { return Stat().peak; }
  void ResetPeak() override { c10::cuda::CUDACachingAllocator::resetPeakStats(device_); }
  void set_limit_bytes(int64_t) override {}
  int64_t reserved_bytes() const override { return Stats().reserved_bytes[kAggregate].current; }
  int64_t allocation_retries() const override { return Stats().num_alloc_retries; }
  void ReleaseCachedBlocks() override { c10::cuda::CUDACachingAllocator::emptyCache(); }

 private:
  static constexpr size_t kAggregate =
      static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  c10::CachingDeviceAllocator::DeviceStats Stats() const {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(device_);
  }
  c10::CachingAllocator::Stat Stat() const { return Stats().allocated_bytes[kAggregate]; }
  c10::DeviceIndex device_;
};
#endif

}  // namespace

int64_t RefusedAllocations(const torch::Device& device) {
  if (device.is_cpu()) {
    const TrackingCpuAllocator* allocator = TrackingCpuAllocator::Installed();
    return allocator != nullptr ? allocator->refusals() : 0;
  }
#ifdef ACCUMULUS_WITH_CUDA
  if (device.is_cuda()) {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).num_ooms;
  }
#endif
  return 0;
}

int64_t ProcessRssBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

StatusOr<std::unique_ptr<MemoryMeter>> MakeMemoryMeter(const torch::Device& device) {
  if (device.is_cpu()) return std::unique_ptr<MemoryMeter>(new CpuMemoryMeter());
#ifdef ACCUMULUS_WITH_CUDA
  if (device.is_cuda()) return std::unique_ptr<MemoryMeter>(new CudaMemoryMeter(device.index()));
#endif
  return Status::Unimplemented(
      "device \"" + device.str() +
      "\": this build has no memory statistics for it (CPU-only LibTorch)");
}

}  // namespace accumulus::engine
