#include "server/controller.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "common/access_token.h"
#include "common/mutex.h"
#include "server/grpc_metrics.h"
#include "server/token_authenticator.h"

namespace accumulus::server {
namespace {

// How long a keepalive ping may wait for its ack (gRPC's own default).
constexpr int kKeepaliveTimeoutMs = 20000;

// Every method but the health service's on the health port: UNIMPLEMENTED.
// (It also gives that server the callback machinery that the default health
// service needs to be served at all.)
class HealthOnly final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refusal final : public grpc::ServerGenericBidiReactor {
     public:
      Refusal() {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "this port serves the gRPC health service only"));
      }
      void OnDone() override { delete this; }
    };
    return new Refusal();
  }
};

// Whether one server serves the reflection service. Linking gRPC's
// reflection library registers its plugin for every server the process
// builds (a static initializer): the plaintext health port's too, and
// whatever --no-reflection says. This option takes it out of one server's
// plugins, or puts exactly one in.
class ReflectionOption final : public grpc::ServerBuilderOption {
 public:
  explicit ReflectionOption(bool serve) : serve_(serve) {}
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    auto reflection = std::make_unique<grpc::reflection::ProtoServerReflectionPlugin>();
    const std::string name = reflection->name();
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [&](const auto& p) { return p->name() == name; }),
                   plugins->end());
    if (serve_) plugins->push_back(std::move(reflection));
  }

 private:
  bool serve_;
};

}  // namespace

Status CheckControllerOptions(const ControllerOptions& options) {
  if (options.tls.insecure && !options.tokens_file.empty()) {
    return Status::InvalidArgument(
        "--tokens-file needs TLS: bearer tokens sent in plaintext can be read by anyone on "
        "the path (drop --insecure, or the tokens)");
  }
  if (!options.tls.insecure) {
    for (const auto& [flag, value] :
         {std::pair{"--tls-cert", &options.tls.cert}, std::pair{"--tls-key", &options.tls.key},
          std::pair{"--worker-ca", &options.tls.worker_ca}}) {
      if (value->empty()) {
        return Status::InvalidArgument(std::string(flag) +
                                       " is required (a PEM file), unless --insecure");
      }
    }
  }
  if (options.listen_address.empty()) return Status::InvalidArgument("--listen is empty");
  if (options.metrics_port < -1 || options.metrics_port > 65535) {
    return Status::InvalidArgument("--metrics-port " + std::to_string(options.metrics_port) +
                                   " is not a port (0: any free one, -1: none)");
  }
  if (options.lost_worker_ms > 0 && options.lost_worker_ms <= options.heartbeat_interval_ms) {
    return Status::InvalidArgument("--lost-worker-ms " + std::to_string(options.lost_worker_ms) +
                                   " must exceed --heartbeat-ms " +
                                   std::to_string(options.heartbeat_interval_ms) +
                                   ": every worker would be lost between two heartbeats");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Controller>> Controller::Start(const ControllerOptions& options) {
  if (Status s = CheckControllerOptions(options); !s.ok()) return s;
  // First: a typo in a certificate path costs nothing.
  StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  if (options.tls.insecure) {
    spdlog::warn(
        "--insecure: serving plaintext gRPC on {}; anyone who reaches it can read the "
        "traffic and register as a worker",
        options.listen_address);
  }
  std::unique_ptr<Controller> c(new Controller());
  c->metrics_ = std::make_unique<ControllerMetrics>(&c->registry_);
  c->clock_ = std::make_unique<AwakeClock>(AwakeClock::kMaxGap, c->metrics_->stalled_seconds,
                                           "the controller",
                                           "workers' silence is measured without that time");
  grpc::EnableDefaultHealthCheckService(true);
  if (!options.health_listen_address.empty()) {
    // Its own server, so that nothing but the health service is plaintext;
    // up before the state is read, so that a probe can tell a controller
    // still recovering (NOT_SERVING) from one that is gone.
    grpc::ServerBuilder health;
    health.AddListeningPort(options.health_listen_address, grpc::InsecureServerCredentials(),
                            &c->health_port_);
    c->health_only_ = std::make_unique<HealthOnly>();
    health.RegisterCallbackGenericService(c->health_only_.get());
    health.SetOption(std::make_unique<ReflectionOption>(/*serve=*/false));
    c->health_server_ = health.BuildAndStart();
    if (!c->health_server_ || c->health_port_ == 0) {
      return Status::Unavailable("cannot listen for gRPC health checks on " +
                                 options.health_listen_address);
    }
    c->health_server_->GetHealthCheckService()->SetServingStatus(false);
    c->health_server_->GetHealthCheckService()->SetServingStatus(kLivenessService, true);
  }
  std::shared_ptr<const TokenTable> tokens;
  if (!options.tokens_file.empty()) {
    StatusOr<std::vector<TokenEntry>> entries = ReadTokenFile(options.tokens_file);
    if (!entries.ok()) return entries.status();
    if (entries->empty()) {
      return Status::InvalidArgument("tokens file " + options.tokens_file +
                                     " lists no token: no client could call the controller");
    }
    tokens = std::make_shared<const TokenTable>(*entries);
    (*credentials)
        ->SetAuthMetadataProcessor(
            std::make_shared<TokenAuthenticator>(tokens, c->metrics_->requests_refused));
    spdlog::info("client API: {} token(s) from {}", entries->size(), options.tokens_file);
  } else {
    spdlog::warn(
        "no --tokens-file: every client may submit, cancel and resume any job, as the "
        "anonymous admin");
  }
  c->access_ = std::make_unique<AccessPolicy>(tokens, c->metrics_->requests_refused);
  if (!options.state_db.empty()) {
    // Before the store is read: a second controller must not even recover
    // the jobs (it would place them too).
    StatusOr<std::unique_ptr<StateLock>> lock =
        StateLock::Acquire(StateLock::PathFor(options.state_db));
    if (!lock.ok()) return lock.status();
    c->state_lock_ = std::move(*lock);
    StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(options.state_db);
    if (!store.ok()) return store.status();
    c->store_ = std::move(*store);
    StatusOr<std::unique_ptr<EventArchive>> archive = EventArchive::Open(options.state_db);
    if (!archive.ok()) return archive.status();
    c->archive_ = std::move(*archive);
  }
  c->jobs_ = std::make_unique<JobManager>(c->metrics_.get(), c->clock_.get(), c->store_.get(),
                                          c->archive_.get(),
                                          static_cast<size_t>(options.events_in_memory));
  c->jobs_->set_finished_job_metrics_retention(options.finished_job_metrics_retention);
  c->jobs_->set_keep_finished(options.keep_finished_jobs);
  c->jobs_->set_max_active_jobs(options.max_active_jobs, options.max_active_jobs_per_owner);
  c->jobs_->set_max_submits_per_minute(options.max_submits_per_minute_per_owner);
  // Before serving: a client must never see a job missing that was there.
  if (Status s = c->jobs_->Recover(std::chrono::milliseconds(options.worker_grace_ms)); !s.ok()) {
    return s;
  }
  c->watch_quota_ =
      std::make_unique<WatchQuota>(options.max_watchers, options.max_watchers_per_caller);
  c->controller_service_ = std::make_unique<ControllerService>(
      c->jobs_.get(), c->access_.get(), c->metrics_.get(), c->watch_quota_.get());
  c->worker_link_service_ = std::make_unique<WorkerLinkService>(
      c->jobs_.get(), c->clock_.get(), options.heartbeat_interval_ms,
      options.lost_worker_ms > 0 ? options.lost_worker_ms : 3 * options.heartbeat_interval_ms,
      /*require_client_certificate=*/!options.tls.insecure);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen_address, *credentials, &c->grpc_port_);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(GrpcMetricsInterceptor(c->metrics_.get()));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.RegisterService(c->controller_service_.get());
  builder.RegisterService(c->worker_link_service_.get());
  builder.SetOption(std::make_unique<ReflectionOption>(options.reflection));
  // Connections whose peer vanished (a powered-off node, a cut cable) are
  // closed, even when idle. The timeout is generous: on a busy connection
  // (a hundred watchers of a fast job) the ping and its ack queue behind
  // megabytes of events, and a tight watchdog would cut every stream on it
  // (it did, at the heartbeat's 1 s, under load). A silent worker is found
  // sooner by its missing heartbeats (--lost-worker-ms), not by this.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.heartbeat_interval_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Peers may ping this often: workers at the heartbeat, clients (the
  // CLI's watch) every 20 s whatever the heartbeat.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             std::min(options.heartbeat_interval_ms / 2, 10000));
  c->server_ = builder.BuildAndStart();
  if (!c->server_ || c->grpc_port_ == 0) {
    return Status::Unavailable("cannot listen for gRPC on " + options.listen_address);
  }
  // Ready: the state is recovered and both services take calls.
  c->server_->GetHealthCheckService()->SetServingStatus(true);
  c->server_->GetHealthCheckService()->SetServingStatus(kLivenessService, true);
  if (c->health_server_) c->health_server_->GetHealthCheckService()->SetServingStatus(true);

  c->housekeeper_ = std::thread([controller = c.get()] { controller->Housekeep(); });

  if (options.metrics_port >= 0) {
    auto exporter =
        metrics::HttpExporter::Start(options.metrics_host, options.metrics_port, &c->registry_);
    if (!exporter.ok()) return exporter.status();
    c->exporter_ = std::move(*exporter);
  }
  return c;
}

void Controller::Housekeep() {
  while (true) {
    {
      MutexLock lock(&housekeeper_mutex_);
      if (!housekeeper_stop_) {
        housekeeper_wake_.WaitFor(&housekeeper_mutex_, std::chrono::milliseconds(100));
      }
      if (housekeeper_stop_) return;
    }
    worker_link_service_->CloseSilentLinks();
    jobs_->Expire();
  }
}

void Controller::Shutdown(std::chrono::milliseconds deadline) {
  if (shut_down_) return;
  shut_down_ = true;
  // Not ready any more, and still alive while it stops (SetServingStatus
  // without a name sets every service's).
  for (grpc::Server* server : {server_.get(), health_server_.get()}) {
    if (server == nullptr) continue;
    server->GetHealthCheckService()->SetServingStatus(false);
    server->GetHealthCheckService()->SetServingStatus(kLivenessService, true);
  }
  // The workers' links would hold the shutdown to its deadline, and their
  // ends would fail the jobs: the jobs stay as they are (the trainers keep
  // training), the links close now, and the workers reconnect to the next
  // controller, which takes up the jobs as after a crash.
  jobs_->BeginShutdown();
  worker_link_service_->CloseAllLinks("the controller is shutting down");
  // In-flight calls finish; the watch streams have ended (BeginShutdown),
  // and the CLI's watch reconnects and resumes after its last event.
  server_->Shutdown(std::chrono::system_clock::now() + deadline);
  server_->Wait();
  if (health_server_) {
    health_server_->Shutdown(std::chrono::system_clock::now());
    health_server_->Wait();
  }
  exporter_.reset();
  {
    MutexLock lock(&housekeeper_mutex_);
    housekeeper_stop_ = true;
  }
  housekeeper_wake_.NotifyAll();
  if (housekeeper_.joinable()) housekeeper_.join();
  // Nothing records any more: what is queued becomes durable now.
  jobs_->Flush();
}

Controller::~Controller() {
  if (server_) {
    Shutdown(std::chrono::milliseconds(0));
  } else if (health_server_) {  // Start failed after the health port listened
    health_server_->Shutdown(std::chrono::system_clock::now());
    health_server_->Wait();
  }
}

}  // namespace accumulus::server
