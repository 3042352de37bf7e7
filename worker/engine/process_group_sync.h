// GradientSync over a c10d process group: a TCPStore rendezvous at rank 0's
// address, then Gloo collectives for CPU ranks and NCCL for CUDA ranks (where
// LibTorch was built with NCCL). Gradients are flattened into buckets of a
// configured size and each bucket is all-reduced once.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/engine/gradient_sync.h"

namespace accumulus::engine {

struct ProcessGroupConfig {
  int rank = 0;
  int world_size = 1;
  // Rank 0's store: rank 0 listens on this port, the others connect.
  std::string rendezvous_host = "127.0.0.1";
  int rendezvous_port = 29500;
  // The address this rank's collectives bind to (reachable by its peers).
  std::string local_address = "127.0.0.1";
  // Where this rank's parameters live: CPU → Gloo, CUDA → NCCL.
  c10::Device device = c10::Device(c10::kCPU);
  std::chrono::milliseconds timeout{300000};
  int64_t bucket_bytes = 25 * 1024 * 1024;
};

// Blocks until every rank has joined (or the timeout passes: UNAVAILABLE).
StatusOr<std::unique_ptr<GradientSync>> ConnectProcessGroup(const ProcessGroupConfig& config);

}  // namespace accumulus::engine
