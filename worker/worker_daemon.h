// The worker daemon: its devices, its link to the controller, and the
// supervisor of its trainer processes, wired together.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "common/tls.h"
#include "worker/controller_link.h"
#include "worker/device_inventory.h"
#include "worker/lease_keeper.h"
#include "worker/path_roots.h"
#include "worker/trainer_supervisor.h"

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
};

class WorkerDaemon {
 public:
  static StatusOr<std::unique_ptr<WorkerDaemon>> Start(WorkerOptions options);
  // Stops every trainer (cancel, then kill after the grace period) and
  // closes the link.
  void Stop();
  ~WorkerDaemon();

  const v1::Register& registration() const { return registration_; }

 private:
  WorkerDaemon() = default;

  v1::Register registration_;
  std::unique_ptr<TrainerSupervisor> supervisor_;
  std::unique_ptr<ControllerLink> link_;
  std::unique_ptr<LeaseKeeper> lease_keeper_;
  bool stopped_ = false;
};

}  // namespace accumulus::worker
