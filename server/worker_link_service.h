// The controller's end of the worker link (accumulus.v1.WorkerLink): one
// bidirectional stream per connected worker.
#pragma once

#include "accumulus/v1/worker.grpc.pb.h"
#include "server/job_manager.h"

namespace accumulus::server {

class WorkerLinkService final : public v1::WorkerLink::CallbackService {
 public:
  WorkerLinkService(JobManager* jobs, int heartbeat_interval_ms)
      : jobs_(jobs), heartbeat_interval_ms_(heartbeat_interval_ms) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  JobManager* const jobs_;
  const int heartbeat_interval_ms_;
};

}  // namespace accumulus::server
