// The device slots a worker offers: CPU slots (a share of the cores and of
// RAM each) and, where the trainer's LibTorch has CUDA, one slot per GPU.
#pragma once

#include <string>
#include <vector>

#include "accumulus/v1/worker.pb.h"
#include "common/status.h"

namespace accumulus::worker {

struct InventoryOptions {
  // CPU ranks this worker runs at once (0: one if no GPU was found, else
  // none). Each gets cores / cpu_slots cores.
  int cpu_slots = 0;
  // Share of RAM offered to CPU ranks altogether, in (0, 1].
  double cpu_memory_fraction = 0.8;
  // The trainer binary, asked which CUDA devices its LibTorch sees.
  std::string trainer_binary;
};

StatusOr<std::vector<v1::Device>> DiscoverDevices(const InventoryOptions& options);

}  // namespace accumulus::worker
