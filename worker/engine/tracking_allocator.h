// A CPU allocator that counts tensor bytes: the CPU analogue of
// torch.cuda.memory_allocated / max_memory_allocated.
//
// Installed with c10::SetCPUAllocator, it sees every CPU tensor allocation
// made after installation. Counters are atomics: LibTorch's intra-op pool
// allocates from several threads at once.
#pragma once

#include <c10/core/Allocator.h>

#include <atomic>
#include <cstdint>

namespace accumulus::engine {

class TrackingCpuAllocator final : public c10::Allocator {
 public:
  // The process-wide instance, installed as LibTorch's CPU allocator on the
  // first call (with a priority above the default allocator's).
  static TrackingCpuAllocator* Install();
  // The instance if it is installed, else nullptr.
  static const TrackingCpuAllocator* Installed();

  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return &Free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  // Bytes of live tensors allocated through this allocator.
  int64_t current_bytes() const { return current_.load(std::memory_order_relaxed); }
  // Highest current_bytes() since the last ResetPeak().
  int64_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  // Starts a new peak measurement from the current level (call at each
  // window start so the peak describes one window).
  void ResetPeak() { peak_.store(current_bytes(), std::memory_order_relaxed); }

  // A memory budget: an allocation that would take current_bytes() past
  // `bytes` throws c10::OutOfMemoryError, as a CUDA allocation beyond the
  // device does, so the same recovery path runs on the CPU. 0: no limit.
  void set_limit_bytes(int64_t bytes) { limit_.store(bytes, std::memory_order_relaxed); }
  int64_t limit_bytes() const { return limit_.load(std::memory_order_relaxed); }
  // Allocations refused for the budget so far.
  int64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  TrackingCpuAllocator() = default;
  static void Free(void* data);
  void Account(int64_t delta) const;

  mutable std::atomic<int64_t> current_{0};
  mutable std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> limit_{0};
  std::atomic<int64_t> refusals_{0};
};

}  // namespace accumulus::engine
