// `accumulus up`: a controller and one worker as child processes on this
// machine, their state and logs under one data directory.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "common/subprocess.h"

namespace accumulus::client {

struct LocalClusterOptions {
  std::string data_dir = "accumulus-data";
  std::string listen_host = "127.0.0.1";
  int grpc_port = 7600;            // 0: any free port
  int metrics_port = 7601;         // 0: any free port
  int worker_metrics_port = 7610;  // 0: any free port, -1: none
  int cpu_slots = 1;
  // Plaintext and no tokens, instead of TLS with development certificates
  // made under data_dir/tls (ca_file()) and an admin token made under
  // data_dir (token_file()).
  bool insecure = false;
};

class LocalCluster {
 public:
  // Starts the controller, waits until it listens, then starts the worker.
  static StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  // SIGTERM to the worker (its trainers stop), then to the controller; waits
  // for both.
  void Stop();
  ~LocalCluster();

  std::string controller_address() const;
  int metrics_port() const { return metrics_port_; }
  const std::string& controller_log() const { return controller_log_; }
  const std::string& worker_log() const { return worker_log_; }
  // The CA a client needs to trust the controller ("" when insecure).
  const std::string& ca_file() const { return ca_file_; }
  // The file holding the admin token a client sends ("" when insecure).
  const std::string& token_file() const { return token_file_; }

 private:
  LocalCluster() = default;

  std::string host_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::string controller_log_;
  std::string worker_log_;
  std::string ca_file_;
  std::string token_file_;
  std::unique_ptr<Subprocess> controller_;
  std::unique_ptr<Subprocess> worker_;
};

}  // namespace accumulus::client
