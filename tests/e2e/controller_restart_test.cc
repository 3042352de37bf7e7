// The controller killed with SIGKILL, or stopped with SIGTERM, while a job
// runs and started again on its state: the job keeps running in its first
// attempt and finishes, and a watcher that stayed connected throughout (it
// reconnects by itself) sees every step once. And the controller's other
// outages: a store that stops writing, one longer than the workers' lease,
// a process stopped (SIGSTOP) rather than ended.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/job_specs.h"
#include "tests/support/read_file.h"
#include "tests/support/tcp_relay.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

template <typename Message>
Message Parse(const std::string& line) {
  Message m;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &m).ok()) << line;
  return m;
}

// 1000 steps of a small MLP (or `epochs` × 100, with `extra` lines).
std::string SubmitLongJob(const TestCluster& cluster, int epochs = 10,
                          const std::string& extra = "") {
  CliResult submitted = cluster.Cli(
      {"-o", "json", "submit", cluster.WriteSpec("long.yaml", LongMlpJob(epochs, extra))});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.stderr_text;
  return submitted.lines.empty() ? "" : Parse<v1::Job>(submitted.lines.at(0)).id();
}

// Watches the job until it reports step `step` (or later), then stops
// watching.
void WatchUntilStep(const TestCluster& cluster, const std::string& id, int64_t step) {
  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", id});
  std::string line;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = Parse<v1::JobEvent>(line);
    if (e.has_step() && e.step().step() >= step) break;
  }
  watch->Signal(SIGTERM);
  watch->Wait();
}

class ControllerRestartBy : public ::testing::TestWithParam<int> {};

TEST_P(ControllerRestartBy, AJobRunsThroughItAndAWatcherSeesEveryStepOnce) {
  TestCluster cluster;
  cluster.StartWorker(1);
  const std::string id = SubmitLongJob(cluster);

  std::string watch_stderr;
  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", id}, &watch_stderr);
  std::vector<int64_t> steps;
  bool restarted = false;
  std::string line;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = Parse<v1::JobEvent>(line);
    if (!e.has_step()) continue;
    steps.push_back(e.step().step());
    if (!restarted && e.step().step() >= 50) {
      const Subprocess::ExitInfo stopped = cluster.RestartController({}, GetParam());
      if (GetParam() == SIGTERM) {
        EXPECT_TRUE(stopped.success) << stopped.description;
      }
      restarted = true;
    }
  }
  EXPECT_EQ(watch->Wait().exit_code, 0)
      << "the job succeeded; the watch said: " << ReadFile(watch_stderr);
  ASSERT_TRUE(restarted);

  CliResult got = cluster.Cli({"-o", "json", "get", id});
  ASSERT_EQ(got.exit_code, 0) << got.stderr_text;
  const v1::Job job = Parse<v1::Job>(got.lines.at(0));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "the job was never restarted";
  ASSERT_EQ(static_cast<int64_t>(steps.size()), job.steps_total());
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i], static_cast<int64_t>(i) + 1) << "every step once, in order";
  }
  const std::string err = ReadFile(watch_stderr);
  EXPECT_NE(err.find("reconnecting after event"), std::string::npos) << err;
  if (GetParam() == SIGTERM) {
    EXPECT_NE(err.find("is not reachable (the controller is shutting down)"), std::string::npos)
        << "the stream was ended, not cut at the deadline: " << err;
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, ControllerRestartBy, ::testing::Values(SIGKILL, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGKILL ? "Kill" : "Term");
                         });

// The controller's state files stop taking writes while a job runs (their
// size limit set to 0 from outside: every write fails, as on a full disk).
// The controller retries, says so on /metrics, refuses a submit with the
// store's error, and acknowledges no worker message it has not recorded: so
// when it is killed and started again with a store that writes, the worker
// sends it what it missed, and the job's stream holds every step once.
TEST(ControllerRestart, AStoreThatStopsWritingLosesNoStepAcrossAKill) {
  TestCluster cluster;
  cluster.StartWorker(1);
  const std::string id = SubmitLongJob(cluster);
  WatchUntilStep(cluster, id, 20);
  const int64_t steps_stored = GetJob(cluster, id).steps_done();
  rlimit limit{};
  ASSERT_EQ(prlimit(cluster.controller_pid(), RLIMIT_FSIZE, nullptr, &limit), 0);
  limit.rlim_cur = 0;
  ASSERT_EQ(prlimit(cluster.controller_pid(), RLIMIT_FSIZE, &limit, nullptr), 0);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  ASSERT_TRUE(cluster.WaitForMetricLine("accumulus_store_writable 0", deadline))
      << "the store never failed a commit";
  CliResult refused = cluster.Cli({"submit", cluster.WriteSpec("refused.yaml", R"(
model: {kind: mlp}
data: {samples: 16, features: 4}
micro_batch: 4
accumulation_steps: 1
optimizer: {kind: sgd, lr: 0.1}
epochs: 1
)")});
  EXPECT_EQ(refused.exit_code, 1) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("the controller cannot record changes now (state database " +
                                     cluster.controller_data_dir() + "/state.db"),
            std::string::npos)
      << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find("nothing was submitted"), std::string::npos)
      << refused.stderr_text;

  // The job trains on meanwhile; what it reports is held, not acknowledged.
  for (v1::Job job = GetJob(cluster, id);
       job.steps_done() < steps_stored + 30 && job.state() == v1::JOB_STATE_RUNNING;
       job = GetJob(cluster, id)) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline + std::chrono::minutes(1))
        << "the job made no progress";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  cluster.RestartController();  // SIGKILL: what was not durable is gone from the controller

  CliResult watched = cluster.Cli({"-o", "json", "watch", id});
  EXPECT_EQ(watched.exit_code, 0) << watched.stderr_text;
  std::vector<int64_t> steps;
  for (const std::string& l : watched.lines) {
    const v1::JobEvent e = Parse<v1::JobEvent>(l);
    if (e.has_step()) steps.push_back(e.step().step());
  }
  const v1::Job job = GetJob(cluster, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "the job was never restarted";
  ASSERT_EQ(static_cast<int64_t>(steps.size()), job.steps_total());
  for (size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i], static_cast<int64_t>(i) + 1) << "every step once, in order";
  }
  CliResult submitted = cluster.Cli({"submit", cluster.dir() + "/refused.yaml"});
  EXPECT_EQ(submitted.exit_code, 0)
      << "a store that writes takes a submit: " << submitted.stderr_text;
}

// The controller down longer than the worker's lease (as while it restarts
// on another node): the worker stops the job's trainer, as it must, since
// it cannot tell an outage from being cut off while the job moves on. That
// attempt ended through no doing of the job's: with no restarts to spend,
// the job restarts once the controller is back, and succeeds.
TEST(ControllerRestart, AnOutagePastTheWorkersLeaseCostsTheJobNoRestart) {
  TestCluster cluster;
  const std::string worker = cluster.StartWorker(1, {"--lease-ms", "600"});
  // 4000 steps (long enough to outlast the outage), checkpointed: attempt 2
  // resumes. No restarts to spend.
  const std::string id = SubmitLongJob(
      cluster, 40, "checkpoint: {dir: " + cluster.dir() + "/checkpoints, every_steps: 100}\n");
  ASSERT_FALSE(id.empty());
  WatchUntilStep(cluster, id, 1);
  cluster.RestartController([&] {
    // Down until the worker's lease has lapsed (its log says so).
    ASSERT_TRUE(WaitForText(cluster.WorkerLog(worker), "worker lease lapsed"))
        << "the lease never lapsed";
  });
  CliResult watched = cluster.Cli({"watch", id});
  EXPECT_EQ(watched.exit_code, 0) << watched.stderr_text;
  const v1::Job job = GetJob(cluster, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE)
      << job.attempts(0).reason();
  EXPECT_NE(job.attempts(0).reason().find("worker lease lapsed"), std::string::npos)
      << job.attempts(0).reason();
  EXPECT_EQ(job.attempt(), 2);
}

// The controller stopped (SIGSTOP, as a debugger, a frozen cgroup or a
// paused VM would) for longer than the lost-worker timeout (4 s here), and
// its network back a second after it runs again. The worker's lease (2 s)
// lapses meanwhile and it stops the job's trainer, as when the controller is
// down. But the worker is not lost when the controller runs again: the
// silence was the controller's, not the worker's. The job, with no restarts
// to spend, restarts from its checkpoint without spending one.
TEST(ControllerRestart, AControllerStoppedPastTheLostWorkerTimeoutLosesNoWorker) {
  TestCluster cluster;
  TcpRelay network(cluster.controller_port());
  const std::string worker = cluster.StartWorker(1, {"--controller", network.address()});
  // Far longer than the test: it is cancelled once its second attempt trains.
  const std::string id = SubmitLongJob(
      cluster, 1000, "checkpoint: {dir: " + cluster.dir() + "/checkpoints, every_steps: 100}\n");
  ASSERT_FALSE(id.empty());
  WatchUntilStep(cluster, id, 1);

  // The fault's timeline, not waits for anything.
  const pid_t controller = cluster.controller_pid();
  const auto stopped_at = std::chrono::steady_clock::now();
  network.Hold();
  ASSERT_EQ(kill(controller, SIGSTOP), 0);
  std::this_thread::sleep_until(stopped_at + std::chrono::seconds(5));
  ASSERT_EQ(kill(controller, SIGCONT), 0);
  std::this_thread::sleep_until(stopped_at + std::chrono::seconds(6));
  network.Release();

  std::unique_ptr<Subprocess> watch = cluster.StartCli({"-o", "json", "watch", id});
  bool restarted = false;
  for (std::string line; !restarted && watch->ReadLine(&line);) {
    const v1::JobEvent e = Parse<v1::JobEvent>(line);
    restarted = e.has_step() && !e.stale() && e.attempt() == 2;
  }
  ASSERT_TRUE(restarted) << "the job ended instead of training on: "
                         << GetJob(cluster, id).reason();
  CliResult cancelled = cluster.Cli({"cancel", id});
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.stderr_text;
  for (std::string line; watch->ReadLine(&line);) {
  }
  watch->Wait();
  const v1::Job job = GetJob(cluster, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED) << job.reason();
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE)
      << job.attempts(0).reason();

  const std::string log = ReadFile(cluster.dir() + "/controller.log");
  EXPECT_NE(log.find("the controller did not run for"), std::string::npos) << log;
  EXPECT_EQ(log.find("lost: no message for"), std::string::npos) << log;
  httplib::Client http("127.0.0.1", cluster.metrics_port());
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  std::smatch stalled;
  ASSERT_TRUE(std::regex_search(
      metrics->body, stalled, std::regex("\naccumulus_controller_stalled_seconds_total (\\S+)\n")))
      << metrics->body;
  EXPECT_GT(std::stod(stalled[1]), 4.5) << "the 5 s stop";
}

// A worker whose buffer for the unreachable controller overflowed says so
// when it is back, in the job's stream; how the job ended is never dropped.
TEST(ControllerRestart, AWorkerSaysHowManyMessagesOfAJobItDropped) {
  TestCluster cluster;
  // Each step its own message, so that the buffer fills before the job ends.
  const std::string worker =
      cluster.StartWorker(1, {"--max-buffered-messages", "20", "--max-event-delay-ms", "0"});
  const std::string id = SubmitLongJob(cluster);
  WatchUntilStep(cluster, id, 1);
  cluster.RestartController([&] {
    // Down until the worker has had to drop messages (its log says so).
    ASSERT_TRUE(WaitForText(cluster.WorkerLog(worker), "dropped")) << "the worker never dropped";
  });
  CliResult watched = cluster.Cli({"-o", "json", "watch", id});
  EXPECT_EQ(watched.exit_code, 0) << watched.stderr_text;
  bool told = false;
  for (const std::string& l : watched.lines) {
    const v1::JobEvent e = Parse<v1::JobEvent>(l);
    told = told || (e.has_log() && e.log().text().find("worker " + worker + " dropped") == 0);
  }
  EXPECT_TRUE(told);
}

// A damaged state file stops the controller with an error naming the file:
// it never serves half a state.
TEST(ControllerRestart, AGarbledStateFileIsAClearErrorNotACrash) {
  const TempDir temp;
  std::ofstream(temp.path() + "/state.db") << std::string(4096, 'x');
  const SpawnOptions options =
      StandaloneController(temp.path(), temp.path() + "/controller.log", ControllerSecurityArgs());
  auto controller = Subprocess::Spawn(options);
  ASSERT_TRUE(controller.ok()) << controller.status().ToString();
  const Subprocess::ExitInfo exit = (*controller)->Wait();
  EXPECT_EQ(exit.exit_code, 1) << exit.description;
  const std::string log = ReadFile(options.log_path);
  EXPECT_NE(log.find(temp.path() + "/state.db: file is not a database"), std::string::npos) << log;
  EXPECT_NE(log.find("move the file aside"), std::string::npos) << log;
}

}  // namespace
}  // namespace accumulus::testing
