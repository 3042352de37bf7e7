// Durable jobs through the whole system: a trainer, or a whole worker
// daemon, killed with SIGKILL after a checkpoint; the controller restarts the
// job on free devices from its newest checkpoint, and it ends with exactly
// the parameters of an uninterrupted run, every step applied once.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "accumulus/v1/controller.pb.h"
#include "tests/support/engine_test_support.h"
#include "tests/support/read_file.h"
#include "tests/support/test_cluster.h"
#include "worker/engine/state_dict.h"

namespace accumulus::testing {
namespace {

v1::JobEvent ParseEvent(const std::string& line) {
  v1::JobEvent e;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &e).ok()) << line;
  return e;
}

// Enough steps (600) that a kill at step 20 lands mid-run.
std::string Spec(const std::string& output, const std::string& checkpoints,
                 const std::string& devices = "1") {
  std::string yaml = R"(
model: {kind: mlp, hidden: [32]}
data: {samples: 1600, features: 8, outputs: 3}
micro_batch: 4
accumulation_steps: 4
collective_timeout_seconds: 5
devices: )" + devices +
                     R"(
optimizer: {kind: adamw, lr: 0.01, weight_decay: 0.01}
lr_schedule: {kind: cosine, warmup_steps: 10}
epochs: 6
seed: 5
threads: {intra_op: 1, blas: 1}
output: )" + output + "\n";
  if (!checkpoints.empty()) {
    yaml += "checkpoint: {dir: " + checkpoints + ", every_steps: 7}\nmax_restarts: 2\n";
  }
  return yaml;
}

// `yaml` (a Spec), 4000 steps long: a job that outlasts a fault of seconds.
std::string Longer(std::string yaml) {
  return yaml.replace(yaml.find("epochs: 6"), 9, "epochs: 40");
}

struct Watched {
  std::vector<v1::StepMetrics> steps;
  std::vector<std::string> logs;
  std::vector<v1::RuntimeInfo> runtimes;
  std::vector<v1::JobState> states;
};

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.StartWorker(1);
    cluster_.StartWorker(1);
  }

  std::string Submit(const std::string& name, const std::string& yaml) {
    CliResult r = cluster_.Cli({"-o", "json", "submit", cluster_.WriteSpec(name, yaml)});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    v1::Job job;
    if (!r.lines.empty()) (void)google::protobuf::util::JsonStringToMessage(r.lines[0], &job);
    return job.id();
  }

  v1::Job Get(const std::string& id) {
    CliResult r = cluster_.Cli({"-o", "json", "get", id});
    v1::Job job;
    if (!r.lines.empty()) (void)google::protobuf::util::JsonStringToMessage(r.lines[0], &job);
    return job;
  }

  // Watches `id` to its end; `fault` runs once, at the first step of attempt
  // 1 at or after step 20.
  Watched Watch(const std::string& id, const std::function<void(const Watched&)>& fault) {
    std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
    Watched w;
    bool faulted = false;
    std::string line;
    while (watch->ReadLine(&line)) {
      const v1::JobEvent e = ParseEvent(line);
      if (e.has_runtime()) w.runtimes.push_back(e.runtime());
      if (e.has_state()) w.states.push_back(e.state().state());
      if (e.has_log()) w.logs.push_back(e.log().text());
      if (e.has_step()) {
        w.steps.push_back(e.step());
        if (!faulted && e.step().step() >= 20) {
          faulted = true;
          fault(w);
        }
      }
    }
    watch->Wait();
    return w;
  }

  static void ExpectBitIdentical(const std::vector<torch::Tensor>& resumed,
                                 const std::vector<torch::Tensor>& reference) {
    ASSERT_EQ(resumed.size(), reference.size());
    for (size_t i = 0; i < resumed.size(); ++i) {
      EXPECT_TRUE(torch::equal(resumed[i], reference[i])) << "tensor " << i << " differs";
    }
  }

  std::vector<torch::Tensor> Parameters(const std::string& path) {
    auto dict = engine::LoadStateDict(path);
    EXPECT_TRUE(dict.ok()) << dict.status().ToString();
    std::vector<torch::Tensor> out;
    if (dict.ok()) {
      for (auto& [name, tensor] : *dict) out.push_back(tensor);
    }
    return out;
  }

  // The uninterrupted run's parameters.
  std::vector<torch::Tensor> Reference(const std::string& devices = "1") {
    const std::string output = cluster_.dir() + "/reference.pt";
    const std::string id = Submit("reference.yaml", Spec(output, "", devices));
    CliResult r = cluster_.Cli({"watch", id});
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return Parameters(output);
  }

  // The step events as a resumed job reports them: attempt 1 from step 1,
  // then attempt 2 from right after the checkpoint it resumed from, to the
  // end. Steps between are allowed only when the controller says their
  // events were lost with the killed worker (checkpointed, never sent).
  void ExpectEveryStepOnce(const Watched& w, int64_t total) {
    ASSERT_EQ(w.runtimes.size(), 2u) << "one plan per attempt";
    const int64_t resumed = w.runtimes[1].resumed_from_step();
    EXPECT_GE(resumed, 14) << "after the checkpoint of step 14 at least";
    EXPECT_EQ(resumed % 7, 0) << "checkpoints every 7 steps";
    std::vector<int64_t> first;
    std::vector<int64_t> second;
    for (const auto& s : w.steps) (s.attempt() == 1 ? first : second).push_back(s.step());
    for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(first[i], static_cast<int64_t>(i) + 1);
    ASSERT_EQ(static_cast<int64_t>(second.size()), total - resumed);
    for (size_t i = 0; i < second.size(); ++i) {
      ASSERT_EQ(second[i], resumed + 1 + static_cast<int64_t>(i)) << "no step twice, none skipped";
    }
    const int64_t delivered = first.empty() ? 0 : first.back();
    if (delivered < resumed) {
      const std::string said = "steps " + std::to_string(delivered + 1) + " to " +
                               std::to_string(resumed) + " were trained and checkpointed";
      EXPECT_TRUE(std::any_of(w.logs.begin(), w.logs.end(), [&](const std::string& l) {
        return l.rfind(said, 0) == 0;
      })) << said;
    }
  }

  TestCluster cluster_;
};

TEST_F(RestartTest, AKilledTrainerResumesFromItsCheckpointToTheSameParameters) {
  const std::vector<torch::Tensor> reference = Reference();
  const std::string output = cluster_.dir() + "/resumed.pt";
  const std::string id = Submit("durable.yaml", Spec(output, cluster_.dir() + "/checkpoints"));
  const Watched w = Watch(id, [](const Watched& seen) {
    ASSERT_FALSE(seen.runtimes.empty());
    ASSERT_EQ(kill(static_cast<pid_t>(seen.runtimes.back().pid()), SIGKILL), 0);
  });
  EXPECT_NE(std::find(w.states.begin(), w.states.end(), v1::JOB_STATE_RESTARTING), w.states.end());
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 2);
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_NE(job.attempts(0).reason().find("killed by signal 9"), std::string::npos)
      << job.attempts(0).reason();
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_TRAINER_CRASHED);
  ExpectEveryStepOnce(w, job.steps_total());

  ExpectBitIdentical(Parameters(output), reference);
}

TEST_F(RestartTest, AJobOnAKilledWorkerResumesOnAnother) {
  const std::vector<torch::Tensor> reference = Reference();
  const std::string output = cluster_.dir() + "/moved.pt";
  const std::string id = Submit("moved.yaml", Spec(output, cluster_.dir() + "/checkpoints"));
  std::string lost;
  const Watched w = Watch(id, [&](const Watched&) {
    lost = Get(id).worker_id();
    cluster_.KillWorker(lost);
  });
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_NE(job.worker_id(), lost) << "resumed on the other worker";
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_NE(job.attempts(0).reason().find("worker " + lost + " lost"), std::string::npos)
      << job.attempts(0).reason();
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_WORKER_LOST);
  ExpectEveryStepOnce(w, job.steps_total());
  ExpectBitIdentical(Parameters(output), reference);
}

// A worker stopped with SIGTERM (a node drain) stops its trainer at the next
// window boundary with a checkpoint of that step, and exits 0; the job
// resumes on the other worker from exactly that step — nothing trained
// twice — and ends with the parameters of an uninterrupted run.
TEST_F(RestartTest, AWorkerStoppedWithSigtermCheckpointsAtTheWindowAndItsJobMoves) {
  const std::vector<torch::Tensor> reference = Reference();
  const std::string output = cluster_.dir() + "/drained.pt";
  const std::string id = Submit("drained.yaml", Spec(output, cluster_.dir() + "/checkpoints"));
  std::string drained;
  const Watched w = Watch(id, [&](const Watched&) {
    drained = Get(id).worker_id();
    const Subprocess::ExitInfo exit = cluster_.StopWorker(drained);
    EXPECT_TRUE(exit.success) << "a drained worker exits 0, not " << exit.description;
  });
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_NE(job.worker_id(), drained);
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_NE(job.attempts(0).reason().find("shutting down"), std::string::npos)
      << job.attempts(0).reason();
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_PREEMPTED);
  ASSERT_EQ(w.runtimes.size(), 2u);
  const int64_t resumed = w.runtimes[1].resumed_from_step();
  EXPECT_EQ(resumed, job.attempts(0).last_step()) << "the stop's own checkpoint, not step 7k";
  std::vector<int64_t> second;
  for (const auto& s : w.steps) {
    if (s.attempt() == 2) second.push_back(s.step());
  }
  ASSERT_EQ(static_cast<int64_t>(second.size()), job.steps_total() - resumed);
  ExpectBitIdentical(Parameters(output), reference);
}

// One rank's own record of when it trained (worker/trainer/run_log.h).
struct TrainingSpan {
  int attempt = 0;
  int64_t start_us = 0;
  int64_t end_us = 0;  // its last line: stopped, or its lease lapsed
  std::string end;
};

std::vector<TrainingSpan> TrainingSpans(const std::string& log_path, const std::string& job_id) {
  std::ifstream in(log_path);
  std::vector<TrainingSpan> spans;
  const std::regex line("accumulus-trainer run: job " + job_id +
                        R"( attempt (\d+) rank 0 at_us=(\d+) (.*))");
  std::string text;
  std::smatch m;
  while (std::getline(in, text)) {
    if (!std::regex_search(text, m, line)) continue;
    const int attempt = std::stoi(m[1]);
    const int64_t at = std::stoll(m[2]);
    if (m[3] == "training starts") {
      spans.push_back({attempt, at, 0, ""});
    } else if (!spans.empty() && spans.back().attempt == attempt) {
      spans.back().end_us = at;
      spans.back().end = m[3];
    }
  }
  return spans;
}

// The worker daemon frozen (SIGSTOP) for 2 s: past its trainer's lease
// (1 s) and its own (2 s), short of the lost-worker timeout (4 s). The
// trainer stops by itself; the thawed daemon says why — it did not run —
// and classes the attempt worker_lost: a restart spent on the worker's
// fault, neither a crash (the trainer's last message was cut short) nor the
// controller's (it answered throughout).
TEST_F(RestartTest, AWorkerDaemonFrozenBrieflyEndsItsAttemptAsWorkerLost) {
  const std::string id = Submit(
      "frozen.yaml", Longer(Spec(cluster_.dir() + "/out.pt", cluster_.dir() + "/checkpoints")));
  std::string frozen;
  Watch(id, [&](const Watched&) {
    frozen = Get(id).worker_id();
    cluster_.SignalWorker(frozen, SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the fault's length
    cluster_.SignalWorker(frozen, SIGCONT);
  });
  ASSERT_FALSE(frozen.empty());
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  ASSERT_EQ(job.attempts_size(), 1);
  const std::string& reason = job.attempts(0).reason();
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_WORKER_LOST) << reason;
  EXPECT_TRUE(reason.find("worker daemon did not run for") != std::string::npos ||
              reason.find("worker " + frozen + " did not renew its lease") != std::string::npos)
      << reason;
  EXPECT_EQ(reason.find("no message for"), std::string::npos) << "not lost by the controller";
  const std::string log = ReadFile(cluster_.WorkerLog(frozen));
  EXPECT_TRUE(std::regex_search(log, std::regex("this worker daemon did not run for [0-9.]+ s")))
      << "the daemon saw its own stall: " << log;
}

// The worker daemon frozen (SIGSTOP) past the controller's lost-worker
// timeout while its trainer trains: the trainer's lease lapses, so it stops
// by itself before the controller starts attempt 2 on the other worker;
// thawed, the worker delivers the events it held, recorded as attempt 1's
// and stale. The job ends with the parameters of an uninterrupted run.
TEST_F(RestartTest, AFrozenWorkersTrainerStopsBeforeItsSuccessorStarts) {
  const std::string reference_output = cluster_.dir() + "/reference.pt";
  {
    const std::string id = Submit("reference.yaml", Longer(Spec(reference_output, "")));
    CliResult r = cluster_.Cli({"watch", id});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  }
  const std::vector<torch::Tensor> reference = Parameters(reference_output);
  const std::string output = cluster_.dir() + "/fenced.pt";
  const std::string id =
      Submit("fenced.yaml", Longer(Spec(output, cluster_.dir() + "/checkpoints")));

  std::string frozen;
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  std::string line;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = ParseEvent(line);
    if (frozen.empty() && e.has_step() && e.step().step() >= 20) {
      frozen = Get(id).worker_id();
      cluster_.SignalWorker(frozen, SIGSTOP);
    }
    if (!frozen.empty() && e.has_runtime() && e.attempt() == 2 && !e.stale()) {
      cluster_.SignalWorker(frozen, SIGCONT);  // attempt 2 runs: thaw the old one
    }
  }
  watch->Wait();
  ASSERT_FALSE(frozen.empty());
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_NE(job.worker_id(), frozen);
  ExpectBitIdentical(Parameters(output), reference);

  // From the trainers' own logs: attempt 1 stopped (its lease lapsed)
  // before attempt 2 started.
  std::vector<TrainingSpan> spans;
  for (const std::string& worker : {std::string("worker-1"), std::string("worker-2")}) {
    for (const TrainingSpan& s :
         TrainingSpans(cluster_.dir() + "/" + worker + "/" + id + "/rank-0.log", id)) {
      spans.push_back(s);
    }
  }
  std::sort(spans.begin(), spans.end(),
            [](const TrainingSpan& a, const TrainingSpan& b) { return a.attempt < b.attempt; });
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_NE(spans[0].end.find("lease lapsed"), std::string::npos) << spans[0].end;
  ASSERT_GT(spans[0].end_us, 0);
  EXPECT_LT(spans[0].end_us, spans[1].start_us) << "two attempts trained at once";

  // Thawed, the worker delivered what it held: the stream ends (once its
  // status is in) with attempt 1's steps, each once, the late ones stale.
  std::vector<v1::JobEvent> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    CliResult all = cluster_.Cli({"-o", "json", "watch", id});
    events.clear();
    bool ended = false;
    for (const std::string& l : all.lines) {
      events.push_back(ParseEvent(l));
      ended = ended || (events.back().stale() && events.back().has_log() &&
                        events.back().log().text().rfind("attempt 1 on worker " + frozen + " ended",
                                                         0) == 0);
    }
    if (ended) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "attempt 1's end never arrived";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polled: another process's doing
  }
  std::vector<int64_t> first;
  int64_t stale_steps = 0;
  for (const v1::JobEvent& e : events) {
    if (!e.has_step()) continue;
    EXPECT_EQ(e.step().attempt(), e.attempt());
    if (e.attempt() == 1) first.push_back(e.step().step());
    if (e.stale()) {
      ++stale_steps;
      EXPECT_EQ(e.attempt(), 1) << "only attempt 1 is stale";
    }
  }
  EXPECT_GT(stale_steps, 0) << "the frozen worker held steps";
  for (size_t i = 0; i < first.size(); ++i) {
    ASSERT_EQ(first[i], static_cast<int64_t>(i) + 1) << "attempt 1's steps, each once, in order";
  }
  EXPECT_EQ(job.steps_done(), job.steps_total()) << "stale steps are not progress";
}

// A cancel stops the trainer at a window boundary with a checkpoint there;
// `accumulus resume` continues from exactly that step.
// A checkpoint is insurance: one that cannot be written (here the job's
// checkpoint directory turns into a plain file after its first checkpoint,
// as a full disk would refuse it) is a warning on the job's stream, in its
// log and on /metrics, and the job trains on to the uninterrupted result.
TEST_F(RestartTest, ACheckpointThatCannotBeWrittenIsAWarningAndTheJobTrainsOn) {
  const std::vector<torch::Tensor> reference = Reference();
  const std::string output = cluster_.dir() + "/unprotected.pt";
  const std::string checkpoints = cluster_.dir() + "/checkpoints";
  const std::string id = Submit("unprotected.yaml", Spec(output, checkpoints));
  std::unique_ptr<Subprocess> watch = cluster_.StartCli({"-o", "json", "watch", id});
  int64_t first_checkpoint = 0;
  std::vector<v1::CheckpointFailed> failures;
  std::string line;
  while (watch->ReadLine(&line)) {
    const v1::JobEvent e = ParseEvent(line);
    if (e.has_checkpoint() && first_checkpoint == 0) {
      first_checkpoint = e.checkpoint().step();
      const std::string job_dir = checkpoints + "/" + id;
      std::filesystem::rename(job_dir, job_dir + ".aside");
      std::ofstream(job_dir) << "not a directory";
    }
    if (e.has_checkpoint_failed()) failures.push_back(e.checkpoint_failed());
  }
  watch->Wait();
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "no restart: nothing failed but the insurance";
  ExpectBitIdentical(Parameters(output), reference);

  ASSERT_EQ(first_checkpoint, 7);
  ASSERT_FALSE(failures.empty()) << "600 steps, a checkpoint every 7";
  for (const v1::CheckpointFailed& f : failures) {
    EXPECT_EQ(f.step() % 7, 0);
    EXPECT_GE(f.resumes_after_step(), first_checkpoint) << "the newest written";
    EXPECT_NE(f.reason().find(checkpoints + "/" + id), std::string::npos) << f.reason();
  }
  CliResult logs = cluster_.Cli({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.stderr_text;
  EXPECT_EQ(std::count_if(logs.lines.begin(), logs.lines.end(),
                          [](const std::string& l) {
                            return l.find("warning: checkpoint after step") != std::string::npos;
                          }),
            static_cast<int64_t>(failures.size()));
  httplib::Client http("127.0.0.1", cluster_.metrics_port());
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("accumulus_job_checkpoint_failures_total{job_id=\"" + id + "\"} " +
                               std::to_string(failures.size()) + "\n"),
            std::string::npos)
      << metrics->body;
}

TEST_F(RestartTest, ACancelledJobResumesWhereItStopped) {
  const std::vector<torch::Tensor> reference = Reference();
  const std::string output = cluster_.dir() + "/paused.pt";
  const std::string id = Submit("paused.yaml", Spec(output, cluster_.dir() + "/checkpoints"));
  const Watched before = Watch(id, [&](const Watched&) {
    CliResult r = cluster_.Cli({"cancel", id, "--reason", "pausing"});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  });
  ASSERT_EQ(Get(id).state(), v1::JOB_STATE_CANCELLED);
  const int64_t stopped_after = before.steps.back().step();

  CliResult r = cluster_.Cli({"resume", id});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  // Queued with the controller's reason, or already starting without one.
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      r.lines[0], std::regex(id + " (queued \\(attempt 2\\): resumed by request: attempt 2 resumes "
                                  "from its newest checkpoint|starting \\(attempt 2\\))")))
      << r.lines[0];
  const Watched after = Watch(id, [](const Watched&) {});
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 2);
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).reason(), "cancelled: pausing");
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_CANCELLED);
  ASSERT_EQ(after.runtimes.size(), 2u);
  EXPECT_EQ(after.runtimes[1].resumed_from_step(), stopped_after)
      << "the stop checkpointed its last step";
  std::vector<int64_t> second;
  for (const auto& s : after.steps) {
    if (s.attempt() == 2) second.push_back(s.step());
  }
  ASSERT_EQ(static_cast<int64_t>(second.size()), job.steps_total() - stopped_after);
  EXPECT_EQ(second.front(), stopped_after + 1);
  ExpectBitIdentical(Parameters(output), reference);
  EXPECT_NE(cluster_.Cli({"resume", id}).exit_code, 0) << "a succeeded job is not resumed";
}

// Elastic: a job on 2 devices loses one worker and resumes on the one left
// with twice the accumulation (the same global batch, so the same windows),
// ending where the uninterrupted 2-device run ends.
TEST_F(RestartTest, AnElasticJobResumesOnFewerDevicesWithTheSameGlobalBatch) {
  const std::vector<torch::Tensor> reference = Reference("2");
  const std::string output = cluster_.dir() + "/elastic.pt";
  const std::string id =
      Submit("elastic.yaml", Spec(output, cluster_.dir() + "/checkpoints", "{min: 1, max: 2}"));
  const Watched w = Watch(id, [&](const Watched&) {
    const v1::Job job = Get(id);
    ASSERT_EQ(job.placements_size(), 2) << "both devices were free";
    cluster_.KillWorker(job.placements(1).worker_id());
  });
  const v1::Job job = Get(id);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.reason();
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.batch().devices(), 1);
  EXPECT_EQ(job.batch().accumulation_steps(), 8) << "4 × 4 × 2 became 4 × 8 × 1";
  std::vector<v1::RuntimeInfo> plans;
  for (const auto& r : w.runtimes) {
    if (r.rank() == 0) plans.push_back(r);
  }
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].world_size(), 2);
  EXPECT_EQ(plans[1].world_size(), 1);
  EXPECT_GE(plans[1].resumed_from_step(), 14);
  for (const auto& s : w.steps) {
    EXPECT_EQ(s.effective_batch(), 32) << "step " << s.step();
    if (s.attempt() == 2 && s.samples() == 32) {
      EXPECT_EQ(s.microbatches(), 8);
    }
  }
  const std::vector<torch::Tensor> resumed = Parameters(output);
  EXPECT_LE(MaxRelativeDifference(resumed, reference), 1e-5);
}

}  // namespace
}  // namespace accumulus::testing
