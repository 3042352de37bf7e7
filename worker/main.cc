// accumulus-worker: parses flags, starts the WorkerDaemon, waits for
// SIGINT/SIGTERM, stops its trainers gracefully.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <optional>

#include "common/config_flags.h"
#include "common/logging.h"
#include "common/paths.h"
#include "common/signals.h"
#include "worker/worker_daemon.h"

int main(int argc, char** argv) {
  accumulus::worker::WorkerOptions options;
  options.inventory.trainer_binary = accumulus::SiblingExecutable("accumulus-trainer");
  accumulus::LoggingOptions logging;
  CLI::App app{"accumulus-worker: runs the training jobs the controller assigns to this node"};
  app.set_version_flag("--version", std::string("accumulus-worker ") + ACCUMULUS_VERSION);
  app.add_option("--controller", options.controller_address, "controller address (host:port)")
      ->envname("ACCUMULUS_CONTROLLER")
      ->capture_default_str();
  app.add_option("--tls-ca", options.tls.ca,
                 "the CA that signed the controller's certificate (default: the system's roots)")
      ->envname("ACCUMULUS_TLS_CA");
  app.add_option("--tls-cert", options.tls.cert,
                 "this worker's client certificate (PEM), signed by the controller's --worker-ca")
      ->envname("ACCUMULUS_TLS_CERT");
  app.add_option("--tls-key", options.tls.key, "the private key of --tls-cert (PEM)")
      ->envname("ACCUMULUS_TLS_KEY");
  app.add_option("--tls-server-name", options.tls.server_name,
                 "the name to check the controller's certificate against (default: the host of "
                 "--controller)");
  app.add_flag("--insecure", options.tls.insecure,
               "dial the controller in plaintext (it must run --insecure too)");
  app.add_option("--worker-id", options.worker_id, "stable worker identity (default: hostname)");
  app.add_option("--advertise-address", options.advertise_address,
                 "address other workers reach this one on (default: hostname)")
      ->envname("ACCUMULUS_ADVERTISE_ADDRESS");
  app.add_option("--rendezvous-port-first", options.rendezvous_port_first,
                 "first port for rendezvous of jobs whose rank 0 runs here")
      ->capture_default_str();
  app.add_option("--rendezvous-port-count", options.rendezvous_port_count,
                 "number of rendezvous ports")
      ->capture_default_str();
  app.add_option("--work-dir", options.work_dir, "directory for job logs")->capture_default_str();
  app.add_option("--data-root", options.roots.data,
                 "a directory a job may read its model, data and labels from (repeatable; "
                 "relative paths start at the first; none: not confined)");
  app.add_option("--output-root", options.roots.output,
                 "a directory a job may write its output and checkpoints under (repeatable; "
                 "relative paths start at the first; none: not confined)");
  app.add_option("--cpu-slots", options.inventory.cpu_slots,
                 "CPU ranks to run at once (0: 1 if no GPU)")
      ->capture_default_str();
  app.add_option("--cpu-memory-fraction", options.inventory.cpu_memory_fraction,
                 "share of RAM offered to CPU ranks")
      ->capture_default_str();
  app.add_option("--intra-op-threads", options.intra_op_threads,
                 "LibTorch threads per rank when the spec leaves it unset (with --blas-threads "
                 "0: each rank measures how to split its cores between LibTorch and the BLAS)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--blas-threads", options.blas_threads,
                 "BLAS threads per rank when the spec leaves it unset (see --intra-op-threads)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-event-delay-ms", options.max_event_delay_ms,
                 "a trainer sends step events at most one message per this interval (0: each "
                 "at once); the most a watcher lags a step, against the relay's work per step")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-buffered-messages", options.max_buffered_messages,
                 "messages kept for an unreachable controller (beyond: the oldest events of a "
                 "job are dropped, and the controller is told how many)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--cancel-grace-ms", options.cancel_grace_ms,
                 "time a cancelled trainer gets to stop before it is killed")
      ->capture_default_str();
  app.add_option("--lease-ms", options.lease_ms,
                 "how long the worker's trainers may run on without hearing from the controller "
                 "(0: half the controller's lost-worker timeout; must be under two thirds of it)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--trainer", options.inventory.trainer_binary, "path of accumulus-trainer")
      ->capture_default_str();
  app.add_option("--metrics-host", options.metrics_host,
                 "host for the /metrics, /healthz and /readyz HTTP endpoint")
      ->capture_default_str();
  app.add_option("--metrics-port", options.metrics_port,
                 "port for /metrics (0: any free port, -1: disabled)")
      ->capture_default_str();
  app.add_option("--log-level", logging.level)->capture_default_str();
  app.add_option("--log-format", logging.format, "text or json")->capture_default_str();
  bool check_config = false;
  accumulus::AddConfigFlags(&app, &check_config);
  if (std::optional<int> exit_code = accumulus::ParseFlags(&app, argc, argv)) return *exit_code;
  if (check_config) {
    return accumulus::ReportCheckedConfig(accumulus::worker::CheckWorkerOptions(options));
  }

  // Before any thread starts (see server/main.cc).
  accumulus::BlockTerminationSignals();
  if (auto s = accumulus::SetUpLogging("worker", logging); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  // A trainer that dies mid-write must not take the daemon with it.
  signal(SIGPIPE, SIG_IGN);
  accumulus::IgnoreFileSizeLimitSignal();
  auto daemon = accumulus::worker::WorkerDaemon::Start(options);
  if (!daemon.ok()) {
    spdlog::error("{}", daemon.status().message());
    return 1;
  }
  // One machine-readable line for whoever started us (tests, `accumulus up`).
  std::printf("accumulus-worker ready metrics_port=%d\n", (*daemon)->metrics_port());
  std::fflush(stdout);
  const int signal_number = accumulus::WaitForTerminationSignal();
  spdlog::info("signal {}: stopping trainers", signal_number);
  (*daemon)->Stop();
  return 0;
}
