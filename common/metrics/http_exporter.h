// Serves a Registry at GET /metrics, a liveness probe at GET /healthz and,
// when given a readiness check, a readiness probe at GET /readyz (200 when
// ready, 503 when not), over HTTP, on its own thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/metrics/registry.h"
#include "common/status.h"

namespace httplib {
class Server;
}

namespace accumulus::metrics {

class HttpExporter {
 public:
  // Binds `host:port` (port 0 picks a free one) and starts serving. The
  // registry must outlive the exporter.
  static StatusOr<std::unique_ptr<HttpExporter>> Start(const std::string& host, int port,
                                                       const Registry* registry,
                                                       std::function<bool()> ready = nullptr);
  ~HttpExporter();  // Stops serving and joins the thread.

  int port() const { return port_; }

 private:
  HttpExporter() = default;

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace accumulus::metrics
