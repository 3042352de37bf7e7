// Every Prometheus family the worker daemon exports on its own /metrics
// (--metrics-port): its devices, its trainer processes, and its link to the
// controller. Job progress is the controller's to export (it merges the
// ranks); these say how the node itself is doing.
#pragma once

#include <vector>

#include "accumulus/v1/worker.pb.h"
#include "common/metrics/registry.h"

namespace accumulus::worker {

struct WorkerMetrics {
  explicit WorkerMetrics(metrics::Registry* registry);

  // The devices this worker offers, by kind, and each one's memory.
  void Inventory(const std::vector<v1::Device>& devices);

  metrics::Gauge* build_info;
  metrics::Family<metrics::Gauge>* device_slots;         // kind: cpu, cuda
  metrics::Family<metrics::Gauge>* device_memory_bytes;  // device: cpu:0, cuda:1
  metrics::Gauge* trainers_running;
  metrics::Counter* trainers_started;
  // The link: messages kept until the controller acknowledges them, those
  // dropped beyond --max-buffered-messages, whether a session is registered,
  // and the registrations after the first.
  metrics::Gauge* messages_buffered;
  metrics::Counter* messages_dropped;
  metrics::Gauge* controller_connected;
  metrics::Counter* controller_reconnects;
  // Time the daemon did not run (AwakeClock): a stall longer than its
  // trainers' lease stops them.
  metrics::Counter* stalled_seconds;
};

}  // namespace accumulus::worker
