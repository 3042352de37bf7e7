// Real accumulus processes for end-to-end tests: a controller and workers on
// loopback ports they pick themselves, and the CLI run as a child process.
#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "common/subprocess.h"
#include "tests/support/hang_watchdog.h"

namespace accumulus::testing {

// The directory of the built executables: $ACCUMULUS_BINARY_DIR, or the
// build's (set by CMake).
std::string BinaryDir();

// The development certificates (deploy/tls/make-dev-certs.sh) of every
// cluster in this test process: $ACCUMULUS_TEST_CERTS when set (made
// beforehand: the GPU bundle), else made once, with the script beside the
// binaries, in a temporary directory.
const std::string& TestCertificates();
// Bearer tokens of every cluster in this test process, issued with
// `accumulus tokens add` into one tokens file, each in a file a CLI's
// --token-file names.
struct TestTokens {
  std::string tokens_file;
  std::string admin;   // name "admin", role admin
  std::string alice;   // "alice", submitter
  std::string bob;     // "bob", submitter
  std::string viewer;  // "victor", viewer
};
const TestTokens& TestTokenFiles();
// The flags that give each process TLS with them, and tokens: the
// controller's certificate, worker CA and tokens file; a worker's client
// certificate; the CLI's CA and the admin's token.
std::vector<std::string> ControllerSecurityArgs();
std::vector<std::string> WorkerTlsArgs();
std::vector<std::string> CliSecurityArgs();

// A controller started on its own, not a TestCluster's: a free loopback
// port, no /metrics, its state in `data_dir`, stderr to `log_path`, `args`
// added (TLS flags among them, or --insecure).
SpawnOptions StandaloneController(const std::string& data_dir, const std::string& log_path,
                                  const std::vector<std::string>& args);

struct CliResult {
  int exit_code = -1;
  std::vector<std::string> lines;  // stdout
  std::string stderr_text;
};

class TestCluster {
 public:
  // Starts a controller on 127.0.0.1 (ports picked by the kernel) with a
  // fresh temporary directory and `controller_args` added; no worker yet.
  explicit TestCluster(std::vector<std::string> controller_args = {});
  ~TestCluster();  // SIGTERM to every process, then waits for them

  // Starts a worker daemon with `cpu_slots` slots and returns its id.
  // `extra_args` may name another --controller (a TcpRelay to it).
  std::string StartWorker(int cpu_slots = 1, const std::vector<std::string>& extra_args = {});
  // The worker's log file (stderr).
  std::string WorkerLog(const std::string& id) const { return dir_ + "/" + id + ".log"; }
  // SIGKILLs the worker daemon `id` (its trainers die with it) and reaps it.
  void KillWorker(const std::string& id);
  // Stops the worker daemon `id` as a node drain does (SIGTERM), or with
  // `signal`, and waits for it to exit.
  Subprocess::ExitInfo StopWorker(const std::string& id, int signal = SIGTERM);
  // Sends `signal` to the worker daemon `id` alone (not its trainers).
  void SignalWorker(const std::string& id, int signal);

  // Stops the controller with `signal` (SIGKILL: a crash; SIGTERM: a
  // graceful stop) and starts it again on the same port and state
  // directory; `while_down` runs in between. Returns how it ended.
  Subprocess::ExitInfo RestartController(const std::function<void()>& while_down = {},
                                         int signal = SIGKILL);
  std::string controller_address() const;
  int controller_port() const { return grpc_port_; }
  // The controller's process id and its --data-dir.
  pid_t controller_pid() const { return controller_->pid(); }
  // A worker's process id (`id` as StartWorker returned it).
  pid_t worker_pid(const std::string& id) const { return WorkerProcess(id)->pid(); }
  std::string controller_data_dir() const { return dir_ + "/controller"; }
  int metrics_port() const { return metrics_port_; }
  const std::string& dir() const { return dir_; }

  // Polls `accumulus workers` until `ids` are all registered; false if they
  // are not by `deadline`.
  bool WaitForWorkers(const std::vector<std::string>& ids,
                      std::chrono::steady_clock::time_point deadline) const;
  // Polls the controller's /metrics until it has the line `line`
  // ("accumulus_watchers 2"); false if it does not by `deadline`.
  bool WaitForMetricLine(const std::string& line,
                         std::chrono::steady_clock::time_point deadline) const;

  // Runs the CLI against this controller to completion, as the admin.
  CliResult Cli(const std::vector<std::string>& args) const;
  // The same with the token in `token_file` ("": none).
  CliResult CliAs(const std::string& token_file, const std::vector<std::string>& args) const;
  // Starts the CLI against this controller, as the admin, stdout captured
  // line by line. `stderr_path`, if given, receives the file its stderr
  // goes to.
  std::unique_ptr<Subprocess> StartCli(const std::vector<std::string>& args,
                                       std::string* stderr_path = nullptr) const;
  // The same with the token in `token_file` ("": none).
  std::unique_ptr<Subprocess> StartCliAs(const std::string& token_file,
                                         const std::vector<std::string>& args,
                                         std::string* stderr_path = nullptr) const;

  // Writes `yaml` to a file in the cluster's directory; returns its path.
  std::string WriteSpec(const std::string& name, const std::string& yaml) const;

 private:
  void StartController(int grpc_port);
  Subprocess* WorkerProcess(const std::string& id) const;

  const std::vector<std::string> controller_args_;
  std::string dir_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<Subprocess> controller_;
  std::vector<std::unique_ptr<Subprocess>> workers_;
  std::set<size_t> killed_;  // indices into workers_ of those KillWorker ended
  // Last: destroyed first, once the destructor has stopped the processes.
  std::unique_ptr<HangWatchdog> watchdog_;
};

// Submits `yaml` (written to the file `name`) with the CLI; the job's id
// ("" when the submit failed, which fails the test).
std::string SubmitJob(const TestCluster& cluster, const std::string& name, const std::string& yaml);
// The job as `accumulus get` shows it (empty when that failed, which fails
// the test).
v1::Job GetJob(const TestCluster& cluster, const std::string& id);

}  // namespace accumulus::testing
