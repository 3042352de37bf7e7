#include "worker/engine/tracking_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

namespace accumulus::engine {
namespace {

// Each block starts with a header that records its size, so freeing needs no
// lookup table. 64 bytes keep the data at c10's 64-byte alignment, and the
// data pointer doubles as the deleter context (which raw_allocate requires).
constexpr size_t kHeaderBytes = 64;

TrackingCpuAllocator* instance = nullptr;

}  // namespace

TrackingCpuAllocator* TrackingCpuAllocator::Install() {
  static TrackingCpuAllocator* const allocator = [] {
    auto* a = new TrackingCpuAllocator();  // Lives as long as the process.
    instance = a;
    c10::SetCPUAllocator(a, /*priority=*/100);
    return a;
  }();
  return allocator;
}

const TrackingCpuAllocator* TrackingCpuAllocator::Installed() { return instance; }

c10::DataPtr TrackingCpuAllocator::allocate(size_t bytes) {
  if (bytes == 0) return {nullptr, nullptr, &Free, c10::Device(c10::DeviceType::CPU)};
  const int64_t limit = limit_.load(std::memory_order_relaxed);
  if (limit > 0 && current_bytes() + static_cast<int64_t>(bytes) > limit) {
    refusals_.fetch_add(1, std::memory_order_relaxed);
    TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", bytes,
                     " bytes with ", current_bytes(), " of the ", limit,
                     "-byte memory budget in use");
  }
  auto* base = static_cast<char*>(c10::alloc_cpu(bytes + kHeaderBytes));
  *reinterpret_cast<size_t*>(base) = bytes;
  void* data = base + kHeaderBytes;
  Account(static_cast<int64_t>(bytes));
  return {data, data, &Free, c10::Device(c10::DeviceType::CPU)};
}

void TrackingCpuAllocator::Free(void* data) {
  if (data == nullptr) return;
  char* base = static_cast<char*>(data) - kHeaderBytes;
  instance->Account(-static_cast<int64_t>(*reinterpret_cast<size_t*>(base)));
  c10::free_cpu(base);
}

void TrackingCpuAllocator::Account(int64_t delta) const {
  const int64_t now = current_.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

}  // namespace accumulus::engine
