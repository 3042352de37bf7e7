// The worker daemon: its devices, its link to the controller, and the
// supervisor of its trainer processes, wired together.
#pragma once

#include <memory>
#include <string>

#include "common/awake_clock.h"
#include "common/metrics/http_exporter.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "common/tls.h"
#include "worker/controller_link.h"
#include "worker/device_inventory.h"
#include "worker/lease_keeper.h"
#include "worker/path_roots.h"
#include "worker/trainer_supervisor.h"
#include "worker/worker_metrics.h"

namespace accumulus::worker {

struct WorkerOptions {
  std::string controller_address = "127.0.0.1:7600";
  // How the link is secured: the controller's CA, this worker's client
  // certificate and key (mutual TLS), or plaintext (--insecure).
  ClientTls tls;
  // Default: the hostname.
  std::string worker_id;
  // The address other workers reach this one on (default: the hostname; on
  // Kubernetes the pod IP).
  std::string advertise_address;
  // Ports for the rendezvous of data-parallel jobs whose rank 0 runs here.
  int rendezvous_port_first = 29500;
  int rendezvous_port_count = 100;
  std::string work_dir = "/tmp/accumulus-worker";
  // Where the specs' paths may lead (worker/path_roots.h); none of a kind:
  // not confined.
  PathRoots roots;
  InventoryOptions inventory;
  // Per-rank defaults for specs that do not set threads (both 0: each rank
  // measures its split; see common/rank_threads.h).
  int intra_op_threads = 0;
  int blas_threads = 0;
  int cancel_grace_ms = 10000;
  // A trainer sends step events at most one message per this interval (0:
  // each at once): how late a watcher may see a step, against the relay's
  // work per step.
  int max_event_delay_ms = 100;
  // Messages buffered for the controller while it is unreachable.
  size_t max_buffered_messages = 100000;
  // The worker's lease (LinkOptions::lease; 0: derived from the
  // controller's lost-worker timeout).
  int lease_ms = 0;
  // /metrics, /healthz and /readyz (registered with the controller); port 0
  // picks a free one, -1 serves none.
  std::string metrics_host = "0.0.0.0";
  int metrics_port = -1;
};

// What can be told of `options` without reading a file, opening a port or
// probing a device: the flags' values and combinations (--check-config;
// Start checks it first).
Status CheckWorkerOptions(const WorkerOptions& options);

class WorkerDaemon {
 public:
  static StatusOr<std::unique_ptr<WorkerDaemon>> Start(WorkerOptions options);
  // Stops every trainer (cancel, then kill after the grace period) and
  // closes the link.
  void Stop();
  ~WorkerDaemon();

  const v1::Register& registration() const { return registration_; }
  int metrics_port() const { return exporter_ ? exporter_->port() : -1; }

 private:
  WorkerDaemon() : metrics_(&registry_) {}

  metrics::Registry registry_;
  WorkerMetrics metrics_;
  // Sees and counts this daemon's own stalls.
  AwakeClock clock_{AwakeClock::kMaxGap, metrics_.stalled_seconds, "this worker daemon",
                    "its trainers stop by themselves after a stall longer than their lease"};
  v1::Register registration_;
  std::unique_ptr<TrainerSupervisor> supervisor_;
  std::unique_ptr<ControllerLink> link_;
  std::unique_ptr<LeaseKeeper> lease_keeper_;
  // Last, so that it goes first: its readiness check asks the link.
  std::unique_ptr<metrics::HttpExporter> exporter_;
  bool stopped_ = false;
};

}  // namespace accumulus::worker
