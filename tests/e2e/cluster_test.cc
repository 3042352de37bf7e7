// End to end: a real controller and worker on loopback, driven through the
// real CLI, the way a user drives them.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <regex>
#include <thread>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/job_specs.h"
#include "tests/support/proto_json.h"
#include "tests/support/read_file.h"
#include "tests/support/test_cluster.h"
#include "worker/engine/thread_setup.h"
#include "worker/engine/thread_split.h"

namespace accumulus::testing {
namespace {

// Long enough to be caught running: ~100k steps.
constexpr char kLongJob[] = R"(
name: e2e-long
model: {kind: mlp, hidden: [16]}
data: {samples: 100000, features: 8, outputs: 3}
micro_batch: 8
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.01}
epochs: 30
)";

// Reads a `watch -o json` stream until an event satisfies `until`; returns
// it, or an empty event if the stream ended first.
template <typename Predicate>
v1::JobEvent ReadUntil(Subprocess* watch, Predicate until) {
  std::string line;
  while (watch->ReadLine(&line)) {
    v1::JobEvent event = FromJson<v1::JobEvent>(line);
    if (until(event)) return event;
  }
  return v1::JobEvent();
}

v1::JobEvent ReadToEnd(Subprocess* watch) {
  v1::JobEvent last;
  std::string line;
  while (watch->ReadLine(&line)) {
    v1::JobEvent event = FromJson<v1::JobEvent>(line);
    if (event.has_state()) last = event;
  }
  return last;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override { cluster_.StartWorker(); }

  std::string Submit(const std::string& yaml) {
    CliResult r = cluster_.Cli({"-o", "json", "submit", cluster_.WriteSpec("job.yaml", yaml)});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.lines.empty() ? "" : FromJson<v1::Job>(r.lines[0]).id();
  }

  v1::WorkerInfo OnlyWorker() {
    CliResult r = cluster_.Cli({"-o", "json", "workers"});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    auto workers = FromJson<v1::ListWorkersResponse>(r.lines.at(0));
    EXPECT_EQ(workers.workers_size(), 1);
    return workers.workers(0);
  }

  TestCluster cluster_;
};

TEST_F(ClusterTest, AccumulatingJobSucceedsWithOneEventPerOptimizerStep) {
  CliResult r = cluster_.Cli(
      {"-o", "json", "submit", cluster_.WriteSpec("small.yaml", kSmallJob), "--watch"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ASSERT_GE(r.lines.size(), 2u);
  const v1::Job submitted = FromJson<v1::Job>(r.lines[0]);
  EXPECT_EQ(submitted.batch().global_batch(), 8 * 4 * 1);

  std::vector<v1::StepMetrics> steps;
  v1::JobEvent last_state;
  int64_t sequence = 0;
  bool saw_runtime = false;
  for (size_t i = 1; i < r.lines.size(); ++i) {
    const v1::JobEvent event = FromJson<v1::JobEvent>(r.lines[i]);
    EXPECT_EQ(event.sequence(), ++sequence) << "events arrive in order, without gaps";
    if (event.has_step()) steps.push_back(event.step());
    if (event.has_state()) last_state = event;
    if (event.has_runtime()) {
      saw_runtime = true;
      EXPECT_TRUE(steps.empty()) << "the runtime report comes before step 1";
      EXPECT_EQ(event.runtime().intra_op_threads(), 1);
      EXPECT_EQ(event.runtime().blas_threads(), 1);
    }
  }
  EXPECT_TRUE(saw_runtime);
  EXPECT_EQ(last_state.state().state(), v1::JOB_STATE_SUCCEEDED);

  // ceil(200 samples / effective batch 32) = 7 steps per epoch, 2 epochs.
  ASSERT_EQ(steps.size(), 14u);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step(), static_cast<int64_t>(i) + 1);
    EXPECT_EQ(steps[i].effective_batch(), 32);
    EXPECT_EQ(steps[i].samples(), i % 7 == 6 ? 200 - 6 * 32 : 32) << "step " << i + 1;
    EXPECT_GT(steps[i].tensor_peak_bytes(), 0);
  }
  EXPECT_LT(steps.back().loss(), steps.front().loss());

  CliResult get = cluster_.Cli({"-o", "json", "get", submitted.id()});
  ASSERT_EQ(get.exit_code, 0);
  const v1::Job job = FromJson<v1::Job>(get.lines.at(0));
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.steps_done(), 14);
  EXPECT_EQ(job.steps_total(), 14);
}

TEST_F(ClusterTest, CancelStopsARunningJobAndFreesItsDevice) {
  const std::string id = Submit(kLongJob);
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  ASSERT_TRUE(
      ReadUntil(watch.get(), [](const v1::JobEvent& e) { return e.has_step(); }).has_step());

  CliResult cancel = cluster_.Cli({"cancel", id, "--reason", "test says stop"});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.stderr_text;
  const v1::JobEvent last = ReadToEnd(watch.get());
  EXPECT_EQ(last.state().state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(last.state().reason(), "test says stop");
  EXPECT_EQ(watch->Wait().exit_code, 1) << "watch reports a job that did not succeed";
  EXPECT_EQ(GetJob(cluster_, id).failure_class(), v1::FAILURE_CLASS_CANCELLED);
  httplib::Client http("127.0.0.1", cluster_.metrics_port());
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("accumulus_attempts_failed_total{failure_class=\"cancelled\"} 1"),
            std::string::npos)
      << metrics->body;

  const v1::WorkerInfo worker = OnlyWorker();
  EXPECT_EQ(worker.free_slots(), 1);
  EXPECT_EQ(worker.job_ids_size(), 0);
  // Cancelling again is refused, with the reason.
  CliResult again = cluster_.Cli({"cancel", id});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.stderr_text.find("already ended cancelled"), std::string::npos)
      << again.stderr_text;
}

// A second worker daemon started with the id of one that is connected (two
// nodes given one --worker-id) is refused, and says why in its log; the
// first keeps its job, its attempt and its slots.
TEST_F(ClusterTest, ASecondWorkerDaemonWithATakenIdIsRefusedAndTheFirstKeepsItsJob) {
  const std::string id = Submit(kLongJob);
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  ASSERT_TRUE(
      ReadUntil(watch.get(), [](const v1::JobEvent& e) { return e.has_step(); }).has_step());
  const v1::WorkerInfo first = OnlyWorker();

  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus-worker",
                  "--controller",
                  cluster_.controller_address(),
                  "--worker-id",
                  first.id(),
                  "--work-dir",
                  cluster_.dir() + "/twin",
                  "--cpu-slots",
                  "2"};
  const std::vector<std::string> tls = WorkerTlsArgs();
  options.argv.insert(options.argv.end(), tls.begin(), tls.end());
  options.log_path = cluster_.dir() + "/twin.log";
  auto twin = Subprocess::Spawn(options);
  ASSERT_TRUE(twin.ok()) << twin.status().ToString();
  const std::string refusal = "did not register this worker: worker id \"" + first.id() +
                              "\" is taken: another worker daemon is connected under it (";
  ASSERT_TRUE(WaitForText(options.log_path, refusal)) << ReadFile(options.log_path);
  (*twin)->Signal(SIGTERM);
  EXPECT_TRUE((*twin)->Wait().success);

  const v1::WorkerInfo after = OnlyWorker();
  EXPECT_EQ(after.devices_size(), 1) << "the first daemon's registration stands";
  EXPECT_EQ(after.job_ids_size(), 1);
  const v1::Job job = GetJob(cluster_, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING) << job.reason();
  EXPECT_EQ(job.attempt(), 1);
  CliResult cancel = cluster_.Cli({"cancel", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.stderr_text;
  EXPECT_EQ(ReadToEnd(watch.get()).state().state(), v1::JOB_STATE_CANCELLED);
}

// One micro-batch per window on one device: the trainer says once that the
// noise scale cannot be measured, a log line `accumulus logs` shows.
constexpr char kUnaccumulatedJob[] = R"(
name: e2e-logs
model: {kind: mlp, hidden: [16]}
data: {kind: synthetic, task: classification, samples: 64, features: 8, outputs: 3}
micro_batch: 8
accumulation_steps: 1
optimizer: {kind: sgd, lr: 0.1}
epochs: 1
)";

TEST_F(ClusterTest, LogsShowsAJobsLogLinesSoFarOrFollowsThemToTheEnd) {
  const std::string id = Submit(kUnaccumulatedJob);
  // --follow: every line until the job ends, then exit 0.
  CliResult followed = cluster_.Cli({"logs", id, "--follow"});
  ASSERT_EQ(followed.exit_code, 0) << followed.stderr_text;
  const std::regex noise_line(
      R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  attempt 1 rank 0  info: the gradient noise scale )"
      R"(is not measured: .*)");
  EXPECT_EQ(std::count_if(followed.lines.begin(), followed.lines.end(),
                          [&](const std::string& l) { return std::regex_match(l, noise_line); }),
            1)
      << ::testing::PrintToString(followed.lines);
  // Without: what is recorded, then exit at once (the job has ended here,
  // but the call does not wait for an end either way).
  CliResult recorded = cluster_.Cli({"logs", id});
  ASSERT_EQ(recorded.exit_code, 0) << recorded.stderr_text;
  EXPECT_EQ(recorded.lines, followed.lines);
  CliResult json = cluster_.Cli({"-o", "json", "logs", id});
  ASSERT_EQ(json.lines.size(), followed.lines.size());
  for (const std::string& line : json.lines) EXPECT_TRUE(FromJson<v1::JobEvent>(line).has_log());

  CliResult unknown = cluster_.Cli({"logs", "job-doesnotexist"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.stderr_text.find("no job"), std::string::npos) << unknown.stderr_text;
}

TEST_F(ClusterTest, LogsOfARunningJobEndWithWhatWasRecordedWhenAsked) {
  const std::string id = Submit(kLongJob);
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  ASSERT_TRUE(
      ReadUntil(watch.get(), [](const v1::JobEvent& e) { return e.has_step(); }).has_step());
  // The job runs on (about 100k steps); logs returns with what it had.
  CliResult recorded = cluster_.Cli({"logs", id});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.stderr_text;
  EXPECT_EQ(GetJob(cluster_, id).state(), v1::JOB_STATE_RUNNING);
  CliResult cancel = cluster_.Cli({"cancel", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.stderr_text;
  ReadToEnd(watch.get());
  watch->Wait();
}

TEST_F(ClusterTest, ATrainerCrashFailsItsJobButNotTheWorker) {
  const std::string id = Submit(kLongJob);
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  const v1::JobEvent runtime =
      ReadUntil(watch.get(), [](const v1::JobEvent& e) { return e.has_runtime(); });
  ASSERT_GT(runtime.runtime().pid(), 0);
  ASSERT_EQ(kill(static_cast<pid_t>(runtime.runtime().pid()), SIGKILL), 0);

  const v1::JobEvent last = ReadToEnd(watch.get());
  EXPECT_EQ(last.state().state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(last.state().reason().find("killed by signal 9"), std::string::npos)
      << last.state().reason();
  EXPECT_EQ(GetJob(cluster_, id).failure_class(), v1::FAILURE_CLASS_TRAINER_CRASHED);

  // The daemon lives on and runs the next job.
  CliResult next = cluster_.Cli({"submit", cluster_.WriteSpec("small.yaml", kSmallJob), "-w"});
  EXPECT_EQ(next.exit_code, 0) << next.stderr_text;
}

TEST_F(ClusterTest, BadSpecIsRejectedWithTheServersMessage) {
  const std::string spec = cluster_.WriteSpec("bad.yaml", R"(
model: {kind: mlp}
data: {samples: 100, features: 4}
micro_batch: 8
global_batch: 100
devices: 2
optimizer: {kind: sgd, lr: 0.1}
epochs: 1
)");
  CliResult r = cluster_.Cli({"submit", spec});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.stderr_text.find("global_batch 100 is not divisible by micro_batch 8 × devices 2"),
            std::string::npos)
      << r.stderr_text;

  CliResult typo = cluster_.Cli({"submit", cluster_.WriteSpec("typo.yaml", "micro_bach: 8\n")});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.stderr_text.find("micro_bach"), std::string::npos) << typo.stderr_text;

  CliResult list = cluster_.Cli({"-o", "json", "list"});
  EXPECT_EQ(list.lines.at(0), "{}") << "nothing was queued";
}

TEST_F(ClusterTest, MetricsEndpointPassesPromtool) {
  CliResult r = cluster_.Cli({"submit", cluster_.WriteSpec("small.yaml", kSmallJob), "-w"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  httplib::Client http("127.0.0.1", cluster_.metrics_port());
  auto response = http.Get("/metrics");
  ASSERT_TRUE(response);
  ASSERT_EQ(response->status, 200);
  EXPECT_NE(response->body.find("accumulus_jobs{state=\"succeeded\"} 1"), std::string::npos)
      << response->body;
  EXPECT_NE(response->body.find("accumulus_jobs_submitted_total 1"), std::string::npos);

  SpawnOptions promtool;
  promtool.argv = {"/usr/bin/promtool", "check", "metrics"};
  promtool.stdin_data = response->body;
  promtool.capture_stdout = true;
  promtool.log_path = cluster_.dir() + "/promtool.log";
  auto check = Subprocess::Spawn(promtool);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  std::string line, output;
  while ((*check)->ReadLine(&line)) output += line + "\n";
  EXPECT_EQ((*check)->Wait().exit_code, 0) << output;
}

// A controller that keeps 3 events of a job in memory: a watcher that comes
// after the job ended reads all of them, from the state database, in order,
// as a watcher that followed it live did.
TEST(EventsInMemory, AReplayFromTheStartReadsWhatMemoryNoLongerHolds) {
  TestCluster cluster({"--events-in-memory", "3"});
  cluster.StartWorker();
  CliResult live =
      cluster.Cli({"-o", "json", "submit", cluster.WriteSpec("small.yaml", kSmallJob), "--watch"});
  ASSERT_EQ(live.exit_code, 0) << live.stderr_text;
  const std::string id = FromJson<v1::Job>(live.lines.at(0)).id();
  CliResult replay = cluster.Cli({"-o", "json", "watch", id});
  ASSERT_EQ(replay.exit_code, 0) << replay.stderr_text;
  ASSERT_GT(replay.lines.size(), 10u) << "far more events than memory holds";
  ASSERT_EQ(replay.lines.size() + 1, live.lines.size()) << "the job, then each event";
  for (size_t i = 0; i < replay.lines.size(); ++i) {
    const v1::JobEvent event = FromJson<v1::JobEvent>(replay.lines[i]);
    ASSERT_EQ(event.sequence(), static_cast<int64_t>(i) + 1) << replay.lines[i];
    EXPECT_EQ(replay.lines[i], live.lines.at(i + 1)) << "the same event as the live watcher saw";
  }
  EXPECT_EQ(FromJson<v1::JobEvent>(replay.lines.back()).state().state(), v1::JOB_STATE_SUCCEEDED);
}

// A worker without thread defaults, a spec without threads: each rank
// measures its split of the slot's cores on the job's micro-batch, and the
// job reports what it tried and what it took.
TEST(RankThreads, WithNothingGivenTheRankMeasuresItsSplitAndReportsIt) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: nothing to split";
  TestCluster cluster;
  cluster.StartWorker(1, {"--intra-op-threads", "0", "--blas-threads", "0"});
  CliResult r =
      cluster.Cli({"-o", "json", "submit", cluster.WriteSpec("small.yaml", kSmallJob), "--watch"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  bool saw_runtime = false;
  for (size_t i = 1; i < r.lines.size(); ++i) {
    const v1::JobEvent event = FromJson<v1::JobEvent>(r.lines[i]);
    if (!event.has_runtime()) continue;
    saw_runtime = true;
    const v1::RuntimeInfo& runtime = event.runtime();
    EXPECT_EQ(runtime.threads_source(), v1::THREADS_SOURCE_MEASURED);
    const std::vector<engine::ThreadSplit> candidates =
        engine::CandidateThreadSplits(cores, engine::BlasSharesIntraOpPool());
    ASSERT_EQ(runtime.thread_trials_size(), static_cast<int>(candidates.size()));
    const v1::ThreadTrial* faster = &runtime.thread_trials(0);
    for (int t = 0; t < runtime.thread_trials_size(); ++t) {
      EXPECT_EQ(runtime.thread_trials(t).intra_op_threads(), candidates[t].intra_op) << t;
      EXPECT_EQ(runtime.thread_trials(t).blas_threads(), candidates[t].blas) << t;
      if (runtime.thread_trials(t).samples_per_second() > faster->samples_per_second()) {
        faster = &runtime.thread_trials(t);
      }
    }
    EXPECT_EQ(runtime.intra_op_threads(), faster->intra_op_threads());
    EXPECT_EQ(runtime.blas_threads(), faster->blas_threads());
  }
  EXPECT_TRUE(saw_runtime);

  const std::string id = FromJson<v1::Job>(r.lines.at(0)).id();
  CliResult events = cluster.Cli({"watch", id});
  ASSERT_EQ(events.exit_code, 0) << events.stderr_text;
  std::string text;
  for (const auto& line : events.lines) text += line + "\n";
  EXPECT_NE(text.find(", measured: " + std::to_string(cores) + "+1 "), std::string::npos) << text;

  // The job keeps rank 0's report: `get` shows the threads in force.
  CliResult get = cluster.Cli({"-o", "json", "get", id});
  ASSERT_EQ(get.exit_code, 0) << get.stderr_text;
  const v1::Job job = FromJson<v1::Job>(get.lines.at(0));
  EXPECT_EQ(job.runtime().threads_source(), v1::THREADS_SOURCE_MEASURED);
  EXPECT_EQ(job.runtime().thread_trials_size(),
            static_cast<int>(
                engine::CandidateThreadSplits(cores, engine::BlasSharesIntraOpPool()).size()));
  CliResult get_text = cluster.Cli({"get", id});
  ASSERT_EQ(get_text.exit_code, 0) << get_text.stderr_text;
  std::string shown;
  for (const auto& line : get_text.lines) shown += line + "\n";
  EXPECT_NE(shown.find("threads:      intra-op " +
                       std::to_string(job.runtime().intra_op_threads()) + ", inter-op 1, BLAS " +
                       std::to_string(job.runtime().blas_threads()) + ", measured:"),
            std::string::npos)
      << shown;
}

}  // namespace
}  // namespace accumulus::testing
