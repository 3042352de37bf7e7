#include "common/metrics/http_exporter.h"

#include <httplib.h>

namespace accumulus::metrics {

StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(const std::string& host, int port,
                                                            const Registry* registry,
                                                            std::function<bool()> ready) {
  std::unique_ptr<HttpExporter> exporter(new HttpExporter());
  exporter->server_ = std::make_unique<httplib::Server>();
  exporter->server_->Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  exporter->server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  if (ready) {
    exporter->server_->Get("/readyz", [ready](const httplib::Request&, httplib::Response& res) {
      const bool is_ready = ready();
      res.status = is_ready ? 200 : 503;
      res.set_content(is_ready ? "ready\n" : "not ready\n", "text/plain");
    });
  }
  const int bound = port == 0 ? exporter->server_->bind_to_any_port(host)
                              : (exporter->server_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return Status::Unavailable("cannot listen for /metrics on " + host + ":" +
                               std::to_string(port));
  }
  exporter->port_ = bound;
  httplib::Server* server = exporter->server_.get();
  exporter->thread_ = std::thread([server] { server->listen_after_bind(); });
  return exporter;
}

HttpExporter::~HttpExporter() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace accumulus::metrics
