#include "client/local_cluster.h"

#include <signal.h>

#include <filesystem>
#include <regex>
#include <vector>

#include "client/bearer_token.h"
#include "common/paths.h"

namespace accumulus::client {
namespace {

// The development CA and certificates in `dir` (deploy/tls/make-dev-certs.sh,
// installed beside the binaries; it keeps what is already there).
Status MakeDevCertificates(const std::filesystem::path& dir, const std::string& log_path) {
  SpawnOptions options;
  options.argv = {SiblingExecutable("accumulus-make-dev-certs"), dir.string()};
  options.log_path = log_path;
  auto script = Subprocess::Spawn(options);
  if (!script.ok()) return script.status();
  const Subprocess::ExitInfo exit = (*script)->Wait();
  if (!exit.success) {
    return Status::FailedPrecondition("cannot make the development certificates in " +
                                      dir.string() + " (" + exit.description + "); see " +
                                      log_path + ", or run with --insecure");
  }
  return Status::Ok();
}

// The controller's tokens file in `dir`, with an admin token whose file is
// `token_file` (both kept when there, so a client keeps its token across
// runs).
Status MakeAdminToken(const std::filesystem::path& dir, const std::string& token_file) {
  std::error_code error;
  if (std::filesystem::exists(token_file, error)) return Status::Ok();
  StatusOr<std::string> token = IssueToken((dir / "tokens").string(), "admin", Role::kAdmin);
  if (!token.ok()) return token.status();
  return WriteTokenFile(token_file, *token);
}

}  // namespace

StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(const LocalClusterOptions& options) {
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::absolute(options.data_dir, error);
  std::filesystem::create_directories(dir / "worker", error);
  if (error) {
    return Status::FailedPrecondition("cannot create data directory " + options.data_dir + ": " +
                                      error.message());
  }
  std::unique_ptr<LocalCluster> cluster(new LocalCluster());
  cluster->host_ = options.listen_host;
  cluster->controller_log_ = (dir / "controller.log").string();
  cluster->worker_log_ = (dir / "worker.log").string();
  const std::filesystem::path tls = dir / "tls";
  std::vector<std::string> controller_tls{"--insecure"};
  std::vector<std::string> worker_tls{"--insecure"};
  if (!options.insecure) {
    if (Status s = MakeDevCertificates(tls, (dir / "tls.log").string()); !s.ok()) return s;
    cluster->ca_file_ = (tls / "ca.pem").string();
    cluster->token_file_ = (dir / "admin.token").string();
    if (Status s = MakeAdminToken(dir, cluster->token_file_); !s.ok()) return s;
    controller_tls = {"--tls-cert",    (tls / "controller.pem").string(),
                      "--tls-key",     (tls / "controller-key.pem").string(),
                      "--worker-ca",   cluster->ca_file_,
                      "--tokens-file", (dir / "tokens").string()};
    worker_tls = {"--tls-ca",   cluster->ca_file_,
                  "--tls-cert", (tls / "worker.pem").string(),
                  "--tls-key",  (tls / "worker-key.pem").string()};
  }

  SpawnOptions controller;
  controller.argv = {SiblingExecutable("accumulus-controller"),
                     "--listen",
                     options.listen_host + ":" + std::to_string(options.grpc_port),
                     "--metrics-host",
                     options.listen_host,
                     "--metrics-port",
                     std::to_string(options.metrics_port),
                     "--data-dir",
                     (dir / "controller").string()};
  controller.argv.insert(controller.argv.end(), controller_tls.begin(), controller_tls.end());
  controller.capture_stdout = true;
  controller.log_path = cluster->controller_log_;
  auto c = Subprocess::Spawn(controller);
  if (!c.ok()) return c.status();
  cluster->controller_ = std::move(*c);

  // The controller prints one line when it listens (or exits if it cannot).
  std::string line;
  std::smatch match;
  static const std::regex kReady(R"(ready grpc_port=(\d+) metrics_port=(-?\d+))");
  if (!cluster->controller_->ReadLine(&line) || !std::regex_search(line, match, kReady)) {
    const auto exit = cluster->controller_->Wait();
    return Status::Unavailable("the controller did not start (" + exit.description + "); see " +
                               cluster->controller_log_);
  }
  cluster->grpc_port_ = std::stoi(match[1]);
  cluster->metrics_port_ = std::stoi(match[2]);

  SpawnOptions worker;
  worker.argv = {SiblingExecutable("accumulus-worker"),
                 "--controller",
                 cluster->controller_address(),
                 "--work-dir",
                 (dir / "worker").string(),
                 "--worker-id",
                 "local-worker",
                 "--cpu-slots",
                 std::to_string(options.cpu_slots),
                 "--advertise-address",
                 options.listen_host,
                 "--metrics-host",
                 options.listen_host,
                 "--metrics-port",
                 std::to_string(options.worker_metrics_port)};
  worker.argv.insert(worker.argv.end(), worker_tls.begin(), worker_tls.end());
  // A job reads and writes under the directory `up` runs in (where relative
  // paths in a spec start, as before) and its data directory, nowhere else.
  const std::string here = std::filesystem::current_path(error).string();
  for (const char* flag : {"--data-root", "--output-root"}) {
    worker.argv.insert(worker.argv.end(), {flag, here, flag, dir.string()});
  }
  worker.log_path = cluster->worker_log_;
  auto w = Subprocess::Spawn(worker);
  if (!w.ok()) return w.status();
  cluster->worker_ = std::move(*w);
  return cluster;
}

void LocalCluster::Stop() {
  for (Subprocess* p : {worker_.get(), controller_.get()}) {
    if (p == nullptr) continue;
    p->Signal(SIGTERM);
    p->Wait();
  }
}

LocalCluster::~LocalCluster() { Stop(); }

std::string LocalCluster::controller_address() const {
  return host_ + ":" + std::to_string(grpc_port_);
}

}  // namespace accumulus::client
