#include "worker/worker_daemon.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>

#include "common/cgroup_limits.h"

namespace accumulus::worker {
namespace {

std::string Hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

Status CheckWorkerOptions(const WorkerOptions& options) {
  if (options.rendezvous_port_first <= 0 || options.rendezvous_port_count <= 0 ||
      options.rendezvous_port_first + options.rendezvous_port_count > 65536) {
    return Status::InvalidArgument(
        "--rendezvous-port-first " + std::to_string(options.rendezvous_port_first) +
        " and --rendezvous-port-count " + std::to_string(options.rendezvous_port_count) +
        " must give a range of ports within 1-65535");
  }
  if (!options.tls.insecure && (options.tls.cert.empty() || options.tls.key.empty())) {
    return Status::InvalidArgument(
        "--tls-cert and --tls-key are required: the controller accepts workers by their client "
        "certificate (or run both with --insecure)");
  }
  if (options.metrics_port < -1 || options.metrics_port > 65535) {
    return Status::InvalidArgument("--metrics-port " + std::to_string(options.metrics_port) +
                                   " is not a port (0: any free one, -1: none)");
  }
  if (options.controller_address.empty()) return Status::InvalidArgument("--controller is empty");
  return Status::Ok();
}

StatusOr<std::unique_ptr<WorkerDaemon>> WorkerDaemon::Start(WorkerOptions options) {
  if (Status s = CheckWorkerOptions(options); !s.ok()) return s;
  StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  if (options.tls.insecure) {
    spdlog::warn("--insecure: the link to the controller {} is plaintext",
                 options.controller_address);
  }
  StatusOr<PathRoots> roots = ResolveRoots(options.roots);
  if (!roots.ok()) return roots.status();
  if (roots->data.empty()) {
    spdlog::warn("no --data-root: a job may read any file this worker can (model, data, labels)");
  }
  if (roots->output.empty()) {
    spdlog::warn(
        "no --output-root: a job may write wherever this worker can (output, checkpoints)");
  }
  StatusOr<std::vector<v1::Device>> devices = DiscoverDevices(options.inventory);
  if (!devices.ok()) return devices.status();
  if (devices->empty()) return Status::FailedPrecondition("this worker has no device slots");

  std::unique_ptr<WorkerDaemon> daemon(new WorkerDaemon());
  daemon->registration_.set_worker_id(options.worker_id.empty() ? Hostname() : options.worker_id);
  daemon->registration_.set_hostname(Hostname());
  daemon->registration_.set_advertise_address(
      options.advertise_address.empty() ? Hostname() : options.advertise_address);
  daemon->registration_.set_rendezvous_port_first(options.rendezvous_port_first);
  daemon->registration_.set_rendezvous_port_count(options.rendezvous_port_count);
  for (const auto& d : *devices) *daemon->registration_.add_devices() = d;
  daemon->metrics_.Inventory(*devices);

  SupervisorOptions supervisor;
  supervisor.trainer_binary = options.inventory.trainer_binary;
  supervisor.worker_id = daemon->registration_.worker_id();
  supervisor.advertise_address = daemon->registration_.advertise_address();
  supervisor.work_dir = options.work_dir;
  supervisor.intra_op_threads = options.intra_op_threads;
  supervisor.blas_threads = options.blas_threads;
  supervisor.cancel_grace_ms = options.cancel_grace_ms;
  supervisor.max_event_delay_ms = options.max_event_delay_ms;
  supervisor.roots = *std::move(roots);
  supervisor.metrics = &daemon->metrics_;
  supervisor.oom_kills = OomKills;

  // The supervisor reports through the link, the link assigns through the
  // supervisor: build the supervisor first, and let it reach the link only
  // once the link exists.
  WorkerDaemon* self = daemon.get();
  daemon->supervisor_ = std::make_unique<TrainerSupervisor>(
      supervisor, [self](v1::WorkerMessage m) { self->link_->Send(std::move(m)); });
  LinkOptions link;
  link.controller_address = options.controller_address;
  link.credentials = *credentials;
  link.tls_server_name = options.tls.server_name;
  link.max_buffered = options.max_buffered_messages;
  link.lease = std::chrono::milliseconds(options.lease_ms);
  link.metrics = &daemon->metrics_;
  daemon->link_ = std::make_unique<ControllerLink>(
      link, daemon->registration_, [self] { return self->supervisor_->RunningJobs(); },
      [self](const v1::ControllerMessage& m) {
        if (m.has_assign()) self->supervisor_->Assign(m.assign(), self->link_->trainer_lease());
        if (m.has_cancel()) self->supervisor_->Cancel(m.cancel().job_id(), m.cancel().reason());
      });
  daemon->lease_keeper_ =
      std::make_unique<LeaseKeeper>(daemon->link_.get(), self->supervisor_.get());
  if (options.metrics_port >= 0) {
    auto exporter =
        metrics::HttpExporter::Start(options.metrics_host, options.metrics_port, &daemon->registry_,
                                     [self] { return self->link_->connected(); });
    if (!exporter.ok()) return exporter.status();
    daemon->exporter_ = std::move(*exporter);
  }
  daemon->link_->Start();
  daemon->lease_keeper_->Start();
  spdlog::info("worker {} offers {} device slot(s); controller {}",
               daemon->registration_.worker_id(), devices->size(), options.controller_address);
  return daemon;
}

void WorkerDaemon::Stop() {
  if (stopped_) return;
  stopped_ = true;
  exporter_.reset();
  // The keeper first: trainers stopping for the shutdown keep their lease.
  supervisor_->StopAll();
  lease_keeper_->Stop();
  // How the trainers ended reaches the controller before the link goes,
  // when it is reachable at all.
  constexpr auto kDrain = std::chrono::seconds(2);
  if (!link_->WaitAcknowledged(std::chrono::steady_clock::now() + kDrain)) {
    spdlog::warn("stopping with {} message(s) the controller has not acknowledged",
                 link_->unacknowledged());
  }
  link_->Stop();
}

WorkerDaemon::~WorkerDaemon() { Stop(); }

}  // namespace accumulus::worker
