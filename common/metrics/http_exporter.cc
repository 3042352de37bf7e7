#include "common/metrics/http_exporter.h"

#include <httplib.h>

namespace accumulus::metrics {

StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(const std::string& host, int port,
                                                            const Registry* registry) {
  std::unique_ptr<HttpExporter> exporter(new HttpExporter());
  exporter->server_ = std::make_unique<httplib::Server>();
  exporter->server_->Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  exporter->server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
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
