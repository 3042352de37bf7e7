// The accumulus controller: the gRPC server (client API, worker link, health)
// and the /metrics endpoint around one JobManager.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/metrics/http_exporter.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "server/controller_metrics.h"
#include "server/controller_service.h"
#include "server/job_manager.h"
#include "server/worker_link_service.h"

namespace accumulus::server {

struct ControllerOptions {
  // gRPC listen address; port 0 picks a free port (see grpc_port()).
  std::string listen_address = "0.0.0.0:7600";
  // /metrics listen host and port; port 0 picks a free one, -1 disables.
  std::string metrics_host = "0.0.0.0";
  int metrics_port = 7601;
  int heartbeat_interval_ms = 5000;
};

class Controller {
 public:
  static StatusOr<std::unique_ptr<Controller>> Start(const ControllerOptions& options);
  // Stops accepting RPCs, lets running ones end until `deadline`, then
  // cancels the rest.
  void Shutdown(std::chrono::milliseconds deadline);
  ~Controller();

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return exporter_ ? exporter_->port() : -1; }

 private:
  Controller() = default;

  metrics::Registry registry_;
  std::unique_ptr<ControllerMetrics> metrics_;
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<ControllerService> controller_service_;
  std::unique_ptr<WorkerLinkService> worker_link_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<metrics::HttpExporter> exporter_;
  int grpc_port_ = 0;
  bool shut_down_ = false;
};

}  // namespace accumulus::server
