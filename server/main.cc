// accumulus-controller: parses flags, starts the Controller, waits for
// SIGINT/SIGTERM, stops gracefully.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "common/config_flags.h"
#include "common/logging.h"
#include "common/signals.h"
#include "server/controller.h"

int main(int argc, char** argv) {
  accumulus::server::ControllerOptions options;
  accumulus::LoggingOptions logging;
  CLI::App app{
      "accumulus-controller: accepts gradient-accumulation jobs and places them on workers"};
  app.set_version_flag("--version", std::string("accumulus-controller ") + ACCUMULUS_VERSION);
  app.add_option("--listen", options.listen_address, "gRPC listen address (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--tls-cert", options.tls.cert, "the controller's certificate chain (PEM)")
      ->envname("ACCUMULUS_TLS_CERT");
  app.add_option("--tls-key", options.tls.key, "the private key of --tls-cert (PEM)")
      ->envname("ACCUMULUS_TLS_KEY");
  app.add_option("--worker-ca", options.tls.worker_ca,
                 "the CA whose client certificates identify workers (PEM): the worker link "
                 "accepts only those")
      ->envname("ACCUMULUS_WORKER_CA");
  app.add_option("--tokens-file", options.tokens_file,
                 "bearer tokens of the client API, hashed, one per line: NAME ROLE sha256:HEX "
                 "(accumulus tokens add); default: none, every client is admin")
      ->envname("ACCUMULUS_TOKENS_FILE");
  app.add_flag("--insecure", options.tls.insecure,
               "serve plaintext gRPC: no TLS, and any peer may register as a worker");
  app.add_option("--health-listen", options.health_listen_address,
                 "a plaintext address that serves only the gRPC health service (for probes that "
                 "cannot speak TLS; default: none)");
  app.add_flag("--reflection,!--no-reflection", options.reflection,
               "serve gRPC server reflection on the API port (grpcurl list, describe): the API's "
               "description, to any caller")
      ->capture_default_str();
  app.add_option("--metrics-host", options.metrics_host, "host for the /metrics HTTP endpoint")
      ->capture_default_str();
  app.add_option("--metrics-port", options.metrics_port,
                 "port for /metrics (0: any free port, -1: disabled)")
      ->capture_default_str();
  app.add_option("--heartbeat-ms", options.heartbeat_interval_ms,
                 "worker heartbeat / keepalive interval")
      ->check(CLI::Range(100, 600000))
      ->capture_default_str();
  app.add_option("--lost-worker-ms", options.lost_worker_ms,
                 "a worker unheard of this long is lost and its jobs restart elsewhere (0: three "
                 "heartbeats); its trainers have stopped by then (their leases are shorter)")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  std::string data_dir = "accumulus-data";
  app.add_option("--data-dir", data_dir, "where the controller keeps its state")
      ->capture_default_str();
  app.add_option("--state-db", options.state_db,
                 "the SQLite state database (default: DATA_DIR/state.db; \"memory\": none, state "
                 "is lost on exit)");
  app.add_option("--keep-finished-jobs", options.keep_finished_jobs,
                 "finished jobs kept with their events, the owner holding the most losing "
                 "its oldest first (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-active-jobs", options.max_active_jobs,
                 "unfinished jobs (queued, placed, restarting) held at once (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-active-jobs-per-owner", options.max_active_jobs_per_owner,
                 "unfinished jobs one owner may have at once (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-submits-per-minute-per-owner", options.max_submits_per_minute_per_owner,
                 "jobs one owner may submit a minute, in bursts of up to a minute's worth (0: "
                 "no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-watchers", options.max_watchers,
                 "watch streams served at once (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-watchers-per-caller", options.max_watchers_per_caller,
                 "watch streams one caller (a token) may have open at once (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--events-in-memory", options.events_in_memory,
                 "each job's newest events held in memory; older ones are read from the state "
                 "database when a watcher replays them")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--worker-grace-ms", options.worker_grace_ms,
                 "after a restart, how long workers have to reconnect and claim their ranks")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  int finished_job_metrics_s = 600;
  app.add_option("--finished-job-metrics-s", finished_job_metrics_s,
                 "a finished job's series stay on /metrics this long, then go")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--log-level", logging.level)->capture_default_str();
  app.add_option("--log-format", logging.format, "text or json")->capture_default_str();
  bool check_config = false;
  accumulus::AddConfigFlags(&app, &check_config);
  if (std::optional<int> exit_code = accumulus::ParseFlags(&app, argc, argv)) return *exit_code;
  options.finished_job_metrics_retention = std::chrono::seconds(finished_job_metrics_s);
  if (check_config) {
    return accumulus::ReportCheckedConfig(accumulus::server::CheckControllerOptions(options));
  }

  // Before any thread starts (the asynchronous logger's is the first): a
  // thread that does not block SIGTERM could be handed it, and its default
  // action would kill the process instead of stopping it gracefully.
  accumulus::BlockTerminationSignals();
  accumulus::IgnoreFileSizeLimitSignal();
  logging.asynchronous = true;  // the job manager logs under its lock
  if (auto s = accumulus::SetUpLogging("controller", logging); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  if (options.state_db.empty()) {
    std::error_code error;
    std::filesystem::create_directories(data_dir, error);
    if (error) {
      std::cerr << "--data-dir " << data_dir << ": " << error.message() << "\n";
      return 2;
    }
    options.state_db = data_dir + "/state.db";
  } else if (options.state_db == "memory") {
    options.state_db.clear();
  }
  auto controller = accumulus::server::Controller::Start(options);
  if (!controller.ok()) {
    spdlog::error("{}", controller.status().message());
    accumulus::StopLogging();
    return 1;
  }
  // One machine-readable line for whoever started us (tests, `accumulus up`).
  std::printf("accumulus-controller ready grpc_port=%d metrics_port=%d health_port=%d\n",
              (*controller)->grpc_port(), (*controller)->metrics_port(),
              (*controller)->health_port());
  std::fflush(stdout);
  spdlog::info("serving gRPC on port {}, /metrics on port {}", (*controller)->grpc_port(),
               (*controller)->metrics_port());

  const int signal = accumulus::WaitForTerminationSignal();
  spdlog::info("signal {}: shutting down", signal);
  (*controller)->Shutdown(std::chrono::seconds(5));
  accumulus::StopLogging();
  return 0;
}
