// Tensor memory of the device a rank trains on: bytes held now and the peak
// since the last ResetPeak. CPU: the counting allocator; CUDA: the caching
// allocator's statistics (torch.cuda.memory_allocated / max_memory_allocated,
// memory_reserved, and its allocation retries).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>

#include "common/status.h"

namespace accumulus::engine {

class MemoryMeter {
 public:
  virtual ~MemoryMeter() = default;
  virtual int64_t current_bytes() const = 0;
  virtual int64_t peak_bytes() const = 0;
  // Starts a new peak from the current level (called at each window start).
  virtual void ResetPeak() = 0;
  // CUDA: what the caching allocator holds from the device and how many
  // allocations it retried after emptying its cache. CPU: 0 (nothing cached).
  virtual int64_t reserved_bytes() const { return 0; }
  virtual int64_t allocation_retries() const { return 0; }
  // Makes allocations beyond `bytes` fail with c10::OutOfMemoryError (0: no
  // limit). CPU: enforced by the counting allocator. CUDA: the device's own
  // memory is the limit; a smaller budget is not enforced.
  virtual void set_limit_bytes(int64_t bytes) = 0;
  // After an out-of-memory: CUDA returns the blocks its caching allocator
  // holds unused to the device, so the retry at a smaller micro-batch is not
  // fragmented by blocks cut for the larger one (the allocator itself only
  // frees whole unused segments when an allocation fails). CPU: nothing is
  // cached.
  virtual void ReleaseCachedBlocks() {}
};

// How many allocations on `device` have been refused for want of memory in
// this process: the counting allocator's refusals on the CPU (0 before it
// is installed), the caching allocator's out-of-memory count on CUDA. An
// error thrown while it rose is an out-of-memory error, whatever it became
// on its way up (the TorchScript interpreter rethrows every error as
// std::runtime_error).
int64_t RefusedAllocations(const torch::Device& device);

// The resident set size of this process (all its memory in RAM: tensors,
// allocator caches, libraries), from /proc/self/statm; 0 where unavailable.
int64_t ProcessRssBytes();

// UNIMPLEMENTED for a CUDA device when this build has no CUDA LibTorch.
StatusOr<std::unique_ptr<MemoryMeter>> MakeMemoryMeter(const torch::Device& device);

}  // namespace accumulus::engine
