// The accumulus controller: the gRPC server (client API, worker link, health)
// and the /metrics endpoint around one JobManager.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/awake_clock.h"
#include "common/metrics/http_exporter.h"
#include "common/metrics/registry.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/tls.h"
#include "server/access_policy.h"
#include "server/controller_metrics.h"
#include "server/controller_service.h"
#include "server/event_archive.h"
#include "server/job_manager.h"
#include "server/job_store.h"
#include "server/state_lock.h"
#include "server/watch_quota.h"
#include "server/worker_link_service.h"

namespace accumulus::server {

struct ControllerOptions {
  // gRPC listen address; port 0 picks a free port (see grpc_port()).
  std::string listen_address = "0.0.0.0:7600";
  // TLS on that port (mutual on the worker link), or plaintext if insecure.
  ServerTls tls;
  // The tokens file (common/access_token.h): callers of the client API need
  // a token listed there, and their role. Empty: no tokens, every caller is
  // the anonymous admin. Needs TLS (a token is never sent in plaintext).
  std::string tokens_file;
  // A plaintext port that serves the standard gRPC health service alone (for
  // probes that cannot speak TLS: Kubernetes' gRPC probes); empty: none.
  std::string health_listen_address;
  // The gRPC server reflection service (v1alpha, as grpcurl and Postman
  // ask it) on the API port: the API's own description, for clients built
  // without its protos. It needs no token: it tells what the published
  // protos tell, never a job.
  bool reflection = true;
  // /metrics listen host and port; port 0 picks a free one, -1 disables.
  std::string metrics_host = "0.0.0.0";
  int metrics_port = 7601;
  int heartbeat_interval_ms = 5000;
  // A worker unheard of for this long is lost (0: three heartbeats). One
  // whose link broke keeps its ranks' attempts and slots until this long
  // after its last message, for it to reconnect.
  int lost_worker_ms = 0;
  // The state database (SQLite); empty: state in memory only, lost on exit.
  std::string state_db;
  // Finished jobs kept, with their events (older ones are deleted).
  int64_t keep_finished_jobs = 1000;
  // Each job's newest events held in memory (with a state database; older
  // ones are read from it when a watcher replays them).
  int64_t events_in_memory = static_cast<int64_t>(JobManager::kEventsInMemory);
  // Unfinished jobs held at once, in all and of one owner (ActiveJobQuota;
  // 0: no limit).
  int64_t max_active_jobs = 20000;
  int64_t max_active_jobs_per_owner = 10000;
  // Jobs one owner may submit a minute (bursts of a minute's worth); 0: no
  // limit.
  int64_t max_submits_per_minute_per_owner = 0;
  // WatchJob streams served at once, in all and to one caller (WatchQuota;
  // 0: no limit).
  int max_watchers = 10000;
  int max_watchers_per_caller = 2000;
  // After a restart, how long workers have to reconnect and claim the
  // ranks they run before those count as lost.
  int worker_grace_ms = 30000;
  // How long a finished job's series stay on /metrics.
  std::chrono::milliseconds finished_job_metrics_retention{std::chrono::minutes(10)};
};

// The health service's name for liveness: SERVING from the moment the
// health port listens until the process exits. "" (the whole server) is
// NOT_SERVING until the state is recovered and again once stopping.
inline constexpr char kLivenessService[] = "liveness";

// What can be told of `options` without reading a file or opening a port:
// the flags' combinations (--check-config; Start checks it first).
Status CheckControllerOptions(const ControllerOptions& options);

class Controller {
 public:
  static StatusOr<std::unique_ptr<Controller>> Start(const ControllerOptions& options);
  // Stops accepting RPCs, lets running ones end until `deadline`, then
  // cancels the rest.
  void Shutdown(std::chrono::milliseconds deadline);
  ~Controller();

  int grpc_port() const { return grpc_port_; }
  int health_port() const { return health_port_; }  // 0: none
  int metrics_port() const { return exporter_ ? exporter_->port() : -1; }

 private:
  Controller() = default;

  // First, so it is released last: held while anything may write the state.
  std::unique_ptr<StateLock> state_lock_;
  metrics::Registry registry_;
  std::unique_ptr<ControllerMetrics> metrics_;
  // Measures workers' silence; outlives the job manager and the links.
  std::unique_ptr<AwakeClock> clock_;
  // Before the job manager: its writer commits to the store until it goes.
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<EventArchive> archive_;  // the store's events, for replays
  std::unique_ptr<JobManager> jobs_;
  std::unique_ptr<AccessPolicy> access_;
  std::unique_ptr<WatchQuota> watch_quota_;  // before the service that uses it
  std::unique_ptr<ControllerService> controller_service_;
  std::unique_ptr<WorkerLinkService> worker_link_service_;
  std::unique_ptr<grpc::Server> server_;
  // Null without a health port; its other methods: UNIMPLEMENTED.
  std::unique_ptr<grpc::CallbackGenericService> health_only_;
  std::unique_ptr<grpc::Server> health_server_;
  std::unique_ptr<metrics::HttpExporter> exporter_;
  int grpc_port_ = 0;
  int health_port_ = 0;
  bool shut_down_ = false;
  // Every 100 ms until Shutdown: closes silent workers' links and calls
  // JobManager::Expire.
  void Housekeep() EXCLUDES(housekeeper_mutex_);
  std::thread housekeeper_;
  Mutex housekeeper_mutex_;
  CondVar housekeeper_wake_;
  bool housekeeper_stop_ GUARDED_BY(housekeeper_mutex_) = false;
};

}  // namespace accumulus::server
