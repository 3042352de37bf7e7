// The controller's per-job series: what a step, a split change and a state
// change export, and that a finished job's series go after the retention.
#include "server/job_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include "common/metrics/registry.h"

namespace accumulus::server {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class JobMetricsTest : public ::testing::Test {
 protected:
  // The value of the sample `series` (name{labels}) in the exposition; NaN
  // when absent.
  double Sample(const std::string& series) const {
    const std::string text = registry_.Render();
    const size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return std::nan("");
    return std::stod(text.substr(at + series.size() + 2));
  }
  bool Has(const std::string& series) const { return !std::isnan(Sample(series)); }

  // The job ids any series names.
  std::set<std::string> JobIds() const {
    const std::string text = registry_.Render();
    const std::regex id(R"(job_id="([^"]+)\")");
    std::set<std::string> ids;
    for (std::sregex_iterator it(text.begin(), text.end(), id), end; it != end; ++it) {
      ids.insert((*it)[1]);
    }
    return ids;
  }

  static v1::Job Job(const std::string& id, int devices = 1) {
    v1::Job job;
    job.set_id(id);
    job.set_attempt(1);
    job.mutable_batch()->set_micro_batch(4);
    job.mutable_batch()->set_accumulation_steps(8);
    job.mutable_batch()->set_devices(devices);
    for (int rank = 0; rank < devices; ++rank) {
      v1::RankPlacement* placement = job.add_placements();
      placement->set_rank(rank);
      placement->set_worker_id("w" + std::to_string(rank));
      placement->set_memory_bytes(1000 + rank);
    }
    job.set_worker_id("w0");
    return job;
  }

  // Queued, placed and training.
  void Start(const v1::Job& job) {
    metrics_.StateChanged(job, v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_QUEUED);
    metrics_.StateChanged(job, v1::JOB_STATE_QUEUED, v1::JOB_STATE_STARTING);
    metrics_.StateChanged(job, v1::JOB_STATE_STARTING, v1::JOB_STATE_RUNNING);
  }

  static v1::StepMetrics Step(int64_t allocator_retries = 0) {
    v1::StepMetrics step;
    step.set_step(1);
    step.set_samples(32);
    step.set_tokens(320);
    step.set_loss(2.5);
    step.set_lr(0.01);
    step.set_grad_norm(3.0);
    step.set_loss_scale(1024);
    step.set_skipped(true);
    step.set_effective_batch(32);
    step.set_step_seconds(0.5);
    step.set_forward_seconds(0.125);
    step.set_backward_seconds(0.25);
    step.set_comm_seconds(0.0625);
    step.set_optimizer_seconds(0.03125);
    step.set_allreduce_bytes(4096);
    step.set_tensor_peak_bytes(900);
    step.set_allocator_retries(allocator_retries);
    step.mutable_noise()->set_noise_scale(1900);
    return step;
  }

  std::chrono::steady_clock::time_point now_{};
  metrics::Registry registry_;
  ControllerMetrics families_{&registry_};
  JobMetrics metrics_{&families_, [this] { return now_; }};
};

TEST_F(JobMetricsTest, EveryStateAndFailureClassIsExportedBeforeAnyJob) {
  for (const char* state : {"queued", "starting", "running", "cancelling", "restarting",
                            "succeeded", "failed", "cancelled"}) {
    EXPECT_EQ(Sample(std::string("accumulus_jobs{state=\"") + state + "\"}"), 0) << state;
  }
  for (const char* failure : {"bad_spec", "out_of_memory", "worker_lost", "cancelled"}) {
    EXPECT_EQ(
        Sample(std::string("accumulus_attempts_failed_total{failure_class=\"") + failure + "\"}"),
        0)
        << failure;
  }
  EXPECT_EQ(Sample("accumulus_jobs_finished_total{state=\"failed\"}"), 0);
  EXPECT_EQ(Sample("accumulus_build_info{version=\"" ACCUMULUS_VERSION "\"}"), 1);
}

TEST_F(JobMetricsTest, AStepExportsTheJobsAndEachRanksFigures) {
  const v1::Job job = Job("j1");
  Start(job);
  metrics_.StepRecorded(job, Step());
  EXPECT_EQ(Sample("accumulus_job_loss{job_id=\"j1\"}"), 2.5);
  EXPECT_EQ(Sample("accumulus_job_samples_total{job_id=\"j1\"}"), 32);
  EXPECT_EQ(Sample("accumulus_job_tokens_total{job_id=\"j1\"}"), 320);
  EXPECT_EQ(Sample("accumulus_job_learning_rate{job_id=\"j1\"}"), 0.01);
  EXPECT_EQ(Sample("accumulus_job_grad_norm{job_id=\"j1\"}"), 3.0);
  EXPECT_EQ(Sample("accumulus_job_loss_scale{job_id=\"j1\"}"), 1024);
  EXPECT_EQ(Sample("accumulus_job_skipped_steps_total{job_id=\"j1\"}"), 1);
  EXPECT_EQ(Sample("accumulus_job_micro_batch{job_id=\"j1\"}"), 4);
  EXPECT_EQ(Sample("accumulus_job_accumulation_steps{job_id=\"j1\"}"), 8);
  EXPECT_EQ(Sample("accumulus_job_running{job_id=\"j1\"}"), 1);
  const std::string rank = "job_id=\"j1\",rank=\"0\",worker_id=\"w0\"";
  EXPECT_EQ(Sample("accumulus_job_phase_seconds_sum{" + rank + ",phase=\"forward\"}"), 0.125);
  EXPECT_EQ(Sample("accumulus_job_phase_seconds_sum{" + rank + ",phase=\"backward\"}"), 0.25);
  EXPECT_EQ(Sample("accumulus_job_phase_seconds_sum{" + rank + ",phase=\"allreduce\"}"), 0.0625);
  EXPECT_EQ(Sample("accumulus_job_phase_seconds_sum{" + rank + ",phase=\"optimizer\"}"), 0.03125);
  EXPECT_EQ(Sample("accumulus_job_allreduce_bytes_total{" + rank + "}"), 4096);
  EXPECT_EQ(Sample("accumulus_job_tensor_peak_bytes{" + rank + "}"), 900);
  EXPECT_EQ(Sample("accumulus_job_memory_budget_bytes{" + rank + "}"), 1000)
      << "no memory_limit_bytes: the slot's memory";
}

// The noise scale is a gauge per job; adaptive accumulation's changes are
// counted, from 0 at the first step so rate() sees the first one.
TEST_F(JobMetricsTest, TheNoiseScaleAndTheBatchChangesArePerJobSeries) {
  v1::Job job = Job("j1");
  Start(job);
  metrics_.StepRecorded(job, Step());
  EXPECT_EQ(Sample("accumulus_job_noise_scale{job_id=\"j1\"}"), 1900);
  EXPECT_EQ(Sample("accumulus_job_batch_changes_total{job_id=\"j1\"}"), 0);
  job.mutable_batch()->set_accumulation_steps(16);
  metrics_.BatchChanged(job);
  v1::StepMetrics later = Step();
  later.set_step(2);
  later.mutable_noise()->set_noise_scale(2500);
  metrics_.StepRecorded(job, later);
  EXPECT_EQ(Sample("accumulus_job_batch_changes_total{job_id=\"j1\"}"), 1);
  EXPECT_EQ(Sample("accumulus_job_noise_scale{job_id=\"j1\"}"), 2500);
  EXPECT_EQ(Sample("accumulus_job_accumulation_steps{job_id=\"j1\"}"), 16);
}

// A running job the controller recovers after a restart has its counters
// from 0 at once, as one it placed itself: a rate() over them needs no step.
TEST_F(JobMetricsTest, ARecoveredRunningJobsCountersExistFromZero) {
  v1::Job job = Job("j1");
  job.set_state(v1::JOB_STATE_RUNNING);
  metrics_.Recovered(job);
  EXPECT_EQ(Sample("accumulus_job_batch_changes_total{job_id=\"j1\"}"), 0);
  EXPECT_EQ(Sample("accumulus_job_checkpoints_total{job_id=\"j1\"}"), 0);
  EXPECT_EQ(Sample("accumulus_job_running{job_id=\"j1\"}"), 1);
}

TEST_F(JobMetricsTest, TheSpecsMemoryLimitIsTheBudget) {
  v1::Job job = Job("j1", 2);
  job.mutable_spec()->set_memory_limit_bytes(500);
  Start(job);
  EXPECT_EQ(Sample("accumulus_job_memory_budget_bytes{job_id=\"j1\",rank=\"1\",worker_id=\"w1\"}"),
            500);
}

TEST_F(JobMetricsTest, QueueWaitIsObservedWhenAnAttemptIsPlaced) {
  const v1::Job job = Job("j1");
  metrics_.StateChanged(job, v1::JOB_STATE_UNSPECIFIED, v1::JOB_STATE_QUEUED);
  now_ += seconds(5);
  metrics_.StateChanged(job, v1::JOB_STATE_QUEUED, v1::JOB_STATE_STARTING);
  EXPECT_EQ(Sample("accumulus_job_queue_wait_seconds_count"), 1);
  EXPECT_EQ(Sample("accumulus_job_queue_wait_seconds_sum"), 5);
}

TEST_F(JobMetricsTest, AllocatorRetriesCountWhatIsNewAndANewAttemptStartsAfresh) {
  v1::Job job = Job("j1");
  Start(job);
  const std::string series =
      "accumulus_job_allocator_retries_total{job_id=\"j1\",rank=\"0\",worker_id=\"w0\"}";
  metrics_.StepRecorded(job, Step(3));
  metrics_.StepRecorded(job, Step(5));
  EXPECT_EQ(Sample(series), 5) << "the trainer's count is cumulative";
  // Attempt 2 runs elsewhere, in a new process that counts from 0.
  job.set_attempt(2);
  job.mutable_placements(0)->set_worker_id("w9");
  metrics_.StateChanged(job, v1::JOB_STATE_RUNNING, v1::JOB_STATE_RESTARTING);
  metrics_.StateChanged(job, v1::JOB_STATE_RESTARTING, v1::JOB_STATE_QUEUED);
  metrics_.StateChanged(job, v1::JOB_STATE_QUEUED, v1::JOB_STATE_STARTING);
  EXPECT_FALSE(Has(series)) << "the old attempt's rank series went with it";
  metrics_.StepRecorded(job, Step(2));
  EXPECT_EQ(Sample("accumulus_job_allocator_retries_total{job_id=\"j1\",rank=\"0\",worker_id="
                   "\"w9\"}"),
            2);
  EXPECT_EQ(Sample("accumulus_job_attempt{job_id=\"j1\"}"), 2);
}

TEST_F(JobMetricsTest, OutOfMemoryRetriesAreCountedPerRank) {
  const v1::Job job = Job("j1", 2);
  Start(job);
  v1::SplitChange split;
  split.set_rank(1);
  split.set_micro_batch(2);
  metrics_.SplitChanged(job, split);
  metrics_.SplitChanged(job, split);
  EXPECT_EQ(Sample("accumulus_job_oom_retries_total{job_id=\"j1\",rank=\"1\",worker_id=\"w1\"}"),
            2);
}

TEST_F(JobMetricsTest, AFinishedJobsSeriesStayForTheRetentionThenGo) {
  metrics_.set_retention(minutes(10));
  const v1::Job job = Job("j1");
  Start(job);
  metrics_.StepRecorded(job, Step());
  metrics_.StateChanged(job, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(Sample("accumulus_jobs_finished_total{state=\"succeeded\"}"), 1);
  EXPECT_EQ(Sample("accumulus_job_running{job_id=\"j1\"}"), 0);
  now_ += minutes(9);
  metrics_.ExpireFinished();
  EXPECT_EQ(Sample("accumulus_job_loss{job_id=\"j1\"}"), 2.5) << "its last values can be read";
  now_ += minutes(1);
  metrics_.ExpireFinished();
  EXPECT_EQ(JobIds(), std::set<std::string>{}) << registry_.Render();
}

TEST_F(JobMetricsTest, AJobResumedWithinTheRetentionKeepsItsSeries) {
  metrics_.set_retention(minutes(10));
  const v1::Job job = Job("j1");
  Start(job);
  metrics_.StateChanged(job, v1::JOB_STATE_RUNNING, v1::JOB_STATE_CANCELLED);
  now_ += minutes(5);
  metrics_.StateChanged(job, v1::JOB_STATE_CANCELLED, v1::JOB_STATE_QUEUED);
  now_ += minutes(6);
  metrics_.ExpireFinished();
  EXPECT_TRUE(Has("accumulus_job_running{job_id=\"j1\"}"));
}

// Cardinality: 200 short jobs, one finishing every 10 s; the series name
// only those that finished within the retention.
TEST_F(JobMetricsTest, AfterManyJobsTheSeriesAreBoundedByTheRetention) {
  const auto retention = minutes(10);
  metrics_.set_retention(retention);
  const auto start = now_;
  std::vector<std::chrono::steady_clock::time_point> finished;
  for (int i = 0; i < 200; ++i) {
    const v1::Job job = Job("j" + std::to_string(i), 2);
    Start(job);
    metrics_.StepRecorded(job, Step(1));
    now_ += seconds(10);
    metrics_.StateChanged(job, v1::JOB_STATE_RUNNING, v1::JOB_STATE_SUCCEEDED);
    finished.push_back(now_);
    metrics_.ExpireFinished();
  }
  size_t within = 0;
  for (const auto& at : finished) within += at + retention > now_ ? 1 : 0;
  ASSERT_LT(within, 200u);
  EXPECT_EQ(JobIds().size(), within);
  const size_t lines_with_some = [&] {
    const std::string text = registry_.Render();
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  }();
  now_ = start + seconds(10 * 200) + retention;
  metrics_.ExpireFinished();
  EXPECT_TRUE(JobIds().empty());
  const std::string text = registry_.Render();
  EXPECT_LT(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')), lines_with_some);
}

}  // namespace
}  // namespace accumulus::server
