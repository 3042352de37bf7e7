// The controller's end of the worker link (accumulus.v1.WorkerLink): one
// bidirectional stream per connected worker. It echoes each heartbeat (the
// echo renews the worker's lease) and closes the link of a worker it has not
// heard from for `lost_after_ms`, which declares the worker lost; its jobs'
// ranks stay fenced until that long after the last message it sent
// (JobManager::WorkerGone), by when their leases have made them stop.
#pragma once

#include <chrono>
#include <mutex>
#include <set>

#include "accumulus/v1/worker.grpc.pb.h"
#include "common/mutex.h"
#include "server/job_manager.h"

namespace accumulus::server {

class LinkReactor;

class WorkerLinkService final : public v1::WorkerLink::CallbackService {
 public:
  WorkerLinkService(JobManager* jobs, int heartbeat_interval_ms, int lost_after_ms)
      : jobs_(jobs), heartbeat_interval_ms_(heartbeat_interval_ms), lost_after_ms_(lost_after_ms) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  // Closes the links of workers silent for lost_after_ms. Called
  // periodically (the controller's housekeeper).
  void CloseSilentLinks();

 private:
  friend class LinkReactor;
  void Forget(LinkReactor* reactor);

  JobManager* const jobs_;
  const int heartbeat_interval_ms_;
  const int lost_after_ms_;
  Mutex mutex_;
  std::set<LinkReactor*> live_ GUARDED_BY(mutex_);  // each removes itself in OnDone
};

}  // namespace accumulus::server
