#include "tests/support/test_cluster.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/free_port.h"
#include "tests/support/proto_json.h"
#include "tests/support/read_file.h"

namespace accumulus::testing {
namespace {

std::unique_ptr<Subprocess> SpawnOrThrow(const SpawnOptions& options) {
  auto process = Subprocess::Spawn(options);
  if (!process.ok()) throw std::runtime_error(process.status().ToString());
  return std::move(*process);
}

bool StoppedCleanly(const Subprocess::ExitInfo& exit) {
  return exit.success || exit.signal == SIGTERM;
}

}  // namespace

const std::string& TestCertificates() {
  static const std::string* const dir = [] {
    const char* ready = std::getenv("ACCUMULUS_TEST_CERTS");
    if (ready != nullptr && *ready != '\0') return new std::string(ready);
    char pattern[] = "/tmp/accumulus-test-certs-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    SpawnOptions options;
    options.argv = {BinaryDir() + "/accumulus-make-dev-certs", pattern};
    options.log_path = std::string(pattern) + "/make-dev-certs.log";
    if (!SpawnOrThrow(options)->Wait().success) {
      throw std::runtime_error("making test certificates failed: " + ReadFile(options.log_path));
    }
    return new std::string(pattern);
  }();
  return *dir;
}

const TestTokens& TestTokenFiles() {
  static const TestTokens* const tokens = [] {
    char pattern[] = "/tmp/accumulus-test-tokens-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    const std::string dir = pattern;
    auto* made = new TestTokens{dir + "/tokens", dir + "/admin.token", dir + "/alice.token",
                                dir + "/bob.token", dir + "/victor.token"};
    for (const auto& [name, role, file] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"admin", "admin", made->admin},
             {"alice", "submitter", made->alice},
             {"bob", "submitter", made->bob},
             {"victor", "viewer", made->viewer}}) {
      SpawnOptions options;
      options.argv = {BinaryDir() + "/accumulus", "tokens", "add", name, role, "--file",
                      made->tokens_file,          "--out",  file};
      options.log_path = dir + "/" + name + ".log";
      if (!SpawnOrThrow(options)->Wait().success) {
        throw std::runtime_error("issuing the test tokens failed: " + ReadFile(options.log_path));
      }
    }
    return made;
  }();
  return *tokens;
}

std::vector<std::string> ControllerSecurityArgs() {
  const std::string& d = TestCertificates();
  return {"--tls-cert",  d + "/controller.pem", "--tls-key",     d + "/controller-key.pem",
          "--worker-ca", d + "/ca.pem",         "--tokens-file", TestTokenFiles().tokens_file};
}

std::vector<std::string> WorkerTlsArgs() {
  const std::string& d = TestCertificates();
  return {"--tls-ca",        d + "/ca.pem", "--tls-cert",
          d + "/worker.pem", "--tls-key",   d + "/worker-key.pem"};
}

std::vector<std::string> CliSecurityArgs() {
  return {"--ca-file", TestCertificates() + "/ca.pem", "--token-file", TestTokenFiles().admin};
}

SpawnOptions StandaloneController(const std::string& data_dir, const std::string& log_path,
                                  const std::vector<std::string>& args) {
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus-controller",
                  "--listen",
                  "127.0.0.1:0",
                  "--metrics-port",
                  "-1",
                  "--data-dir",
                  data_dir};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.log_path = log_path;
  return options;
}

std::string BinaryDir() {
  // The build's own directory, unless the binaries were moved (a bundle run
  // on a GPU machine: scripts/gpu-check.sh).
  const char* moved = std::getenv("ACCUMULUS_BINARY_DIR");
  return moved != nullptr && *moved != '\0' ? moved : ACCUMULUS_BINARY_DIR;
}

TestCluster::TestCluster(std::vector<std::string> controller_args)
    : controller_args_(std::move(controller_args)) {
  char pattern[] = "/tmp/accumulus-test-XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = pattern;
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  watchdog_ = std::make_unique<HangWatchdog>(
      dir_, test != nullptr ? std::string(test->test_suite_name()) + "." + test->name() : "a test",
      TestHangLimit());

  StartController(0);
}

void TestCluster::StartController(int grpc_port) {
  SpawnOptions options;
  options.argv = {
      BinaryDir() + "/accumulus-controller", "--listen", "127.0.0.1:" + std::to_string(grpc_port),
      "--metrics-host", "127.0.0.1", "--metrics-port", "0",
      // Short keepalive: a killed worker is noticed quickly.
      // Lost after 4 s: worker leases of 2 s, trainer leases of
      // 1 s — a controller restart (well under a second here)
      // stops no trainer.
      "--heartbeat-ms", "1000", "--lost-worker-ms", "4000", "--data-dir", controller_data_dir()};
  const std::vector<std::string> tls = ControllerSecurityArgs();
  options.argv.insert(options.argv.end(), tls.begin(), tls.end());
  options.argv.insert(options.argv.end(), controller_args_.begin(), controller_args_.end());
  options.capture_stdout = true;
  options.log_path = dir_ + "/controller.log";
  controller_ = SpawnOrThrow(options);
  // The controller's first stdout line says it listens, and where.
  std::string line;
  std::smatch match;
  if (!controller_->ReadLine(&line) ||
      !std::regex_search(line, match, std::regex(R"(grpc_port=(\d+) metrics_port=(\d+))"))) {
    throw std::runtime_error("controller did not start: " + ReadFile(options.log_path));
  }
  grpc_port_ = std::stoi(match[1]);
  metrics_port_ = std::stoi(match[2]);
}

Subprocess::ExitInfo TestCluster::RestartController(const std::function<void()>& while_down,
                                                    int signal) {
  controller_->Signal(signal);
  const Subprocess::ExitInfo exit = controller_->Wait();
  if (while_down) while_down();
  StartController(grpc_port_);
  return exit;
}

TestCluster::~TestCluster() {
  for (auto& w : workers_) w->Signal(SIGCONT);  // a test may have left one stopped
  for (auto& w : workers_) w->Signal(SIGTERM);
  // Asked to stop, each ends cleanly: exit code 0 (or SIGTERM itself, when
  // it came before the process set up its handling). Under a sanitizer a
  // report (a leak found at exit included) sets an exit code, and fails the
  // test.
  for (size_t i = 0; i < workers_.size(); ++i) {
    const Subprocess::ExitInfo exit = workers_[i]->Wait();
    if (killed_.count(i) == 0) {
      EXPECT_TRUE(StoppedCleanly(exit))
          << "worker-" << i + 1 << " ended with " << exit.description
          << "; its log: " << ReadFile(WorkerLog("worker-" + std::to_string(i + 1)));
    }
  }
  controller_->Signal(SIGTERM);
  const Subprocess::ExitInfo exit = controller_->Wait();
  EXPECT_TRUE(StoppedCleanly(exit)) << "the controller ended with " << exit.description
                                    << "; its log: " << ReadFile(dir_ + "/controller.log");
  std::string command = "rm -rf '" + dir_ + "'";
  if (std::getenv("ACCUMULUS_KEEP_TEST_DIRS") == nullptr) (void)!system(command.c_str());
}

std::string TestCluster::StartWorker(int cpu_slots, const std::vector<std::string>& extra_args) {
  const std::string id = "worker-" + std::to_string(workers_.size() + 1);
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus-worker",
                  "--worker-id",
                  id,
                  "--work-dir",
                  dir_ + "/" + id,
                  "--cpu-slots",
                  std::to_string(cpu_slots),
                  "--cancel-grace-ms",
                  "5000",
                  "--advertise-address",
                  "127.0.0.1",
                  "--rendezvous-port-first",
                  std::to_string(FreeLoopbackPort()),
                  "--rendezvous-port-count",
                  "1"};
  const std::vector<std::string> tls = WorkerTlsArgs();
  options.argv.insert(options.argv.end(), tls.begin(), tls.end());
  // This controller, unless the test names another address for it (a relay).
  if (std::find(extra_args.begin(), extra_args.end(), "--controller") == extra_args.end()) {
    options.argv.insert(options.argv.end(), {"--controller", controller_address()});
  }
  // One LibTorch thread and one BLAS thread per rank unless the test says:
  // fixed, so runs are bit-reproducible and do not crowd each other.
  if (std::find(extra_args.begin(), extra_args.end(), "--intra-op-threads") == extra_args.end()) {
    options.argv.insert(options.argv.end(), {"--intra-op-threads", "1", "--blas-threads", "1"});
  }
  options.argv.insert(options.argv.end(), extra_args.begin(), extra_args.end());
  options.log_path = WorkerLog(id);
  workers_.push_back(SpawnOrThrow(options));
  return id;
}

void TestCluster::KillWorker(const std::string& id) {
  killed_.insert(std::stoul(id.substr(id.rfind('-') + 1)) - 1);
  SignalWorker(id, SIGKILL);
  WorkerProcess(id)->Wait();
}

Subprocess::ExitInfo TestCluster::StopWorker(const std::string& id, int signal) {
  SignalWorker(id, signal);
  return WorkerProcess(id)->Wait();
}

void TestCluster::SignalWorker(const std::string& id, int signal) {
  WorkerProcess(id)->Signal(signal);
}

Subprocess* TestCluster::WorkerProcess(const std::string& id) const {
  // Ids are "worker-N", N counting from 1 in start order.
  return workers_.at(std::stoul(id.substr(id.rfind('-') + 1)) - 1).get();
}

std::string TestCluster::controller_address() const {
  return "127.0.0.1:" + std::to_string(grpc_port_);
}

std::unique_ptr<Subprocess> TestCluster::StartCli(const std::vector<std::string>& args,
                                                  std::string* stderr_path) const {
  return StartCliAs(TestTokenFiles().admin, args, stderr_path);
}

std::unique_ptr<Subprocess> TestCluster::StartCliAs(const std::string& token_file,
                                                    const std::vector<std::string>& args,
                                                    std::string* stderr_path) const {
  static std::atomic<int> counter{0};
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus", "--controller", controller_address(), "--ca-file",
                  TestCertificates() + "/ca.pem"};
  if (!token_file.empty()) options.argv.insert(options.argv.end(), {"--token-file", token_file});
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.capture_stdout = true;
  options.log_path = dir_ + "/cli-" + std::to_string(++counter) + ".stderr";
  if (stderr_path != nullptr) *stderr_path = options.log_path;
  return SpawnOrThrow(options);
}

CliResult TestCluster::Cli(const std::vector<std::string>& args) const {
  return CliAs(TestTokenFiles().admin, args);
}

CliResult TestCluster::CliAs(const std::string& token_file,
                             const std::vector<std::string>& args) const {
  std::string stderr_path;
  std::unique_ptr<Subprocess> cli = StartCliAs(token_file, args, &stderr_path);
  CliResult result;
  std::string line;
  while (cli->ReadLine(&line)) result.lines.push_back(line);
  result.exit_code = cli->Wait().exit_code;
  result.stderr_text = ReadFile(stderr_path);
  return result;
}

bool TestCluster::WaitForWorkers(const std::vector<std::string>& ids,
                                 std::chrono::steady_clock::time_point deadline) const {
  while (true) {
    const CliResult r = Cli({"-o", "json", "workers"});
    if (r.exit_code == 0 && !r.lines.empty()) {
      const auto listed = FromJson<v1::ListWorkersResponse>(r.lines.front());
      size_t found = 0;
      for (const std::string& id : ids) {
        for (const v1::WorkerInfo& w : listed.workers()) found += w.id() == id ? 1 : 0;
      }
      if (found == ids.size()) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // Registration is another process's doing: polled, at a short interval.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool TestCluster::WaitForMetricLine(const std::string& line,
                                    std::chrono::steady_clock::time_point deadline) const {
  httplib::Client http("127.0.0.1", metrics_port_);
  while (true) {
    const auto page = http.Get("/metrics");
    if (page && page->status == 200 &&
        ("\n" + page->body).find("\n" + line + "\n") != std::string::npos) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // The controller's doing, in another process: polled, at a short interval.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string TestCluster::WriteSpec(const std::string& name, const std::string& yaml) const {
  const std::string path = dir_ + "/" + name;
  std::ofstream(path) << yaml;
  return path;
}

std::string SubmitJob(const TestCluster& cluster, const std::string& name,
                      const std::string& yaml) {
  CliResult r = cluster.Cli({"-o", "json", "submit", cluster.WriteSpec(name, yaml)});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  return r.lines.empty() ? "" : FromJson<v1::Job>(r.lines[0]).id();
}

v1::Job GetJob(const TestCluster& cluster, const std::string& id) {
  CliResult r = cluster.Cli({"-o", "json", "get", id});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  return r.lines.empty() ? v1::Job() : FromJson<v1::Job>(r.lines[0]);
}

}  // namespace accumulus::testing
