// The job manager's Prometheus series: jobs by state, each running job's
// progress and memory (per rank), and the worker pool's gauges. It keeps no
// state of its own beyond the families (which are thread-safe); the job
// manager calls it as jobs change, so a series always says what the job
// records say.
#pragma once

#include <cstdint>
#include <string>

#include "accumulus/v1/controller.pb.h"
#include "server/controller_metrics.h"

namespace accumulus::server {

class JobMetrics {
 public:
  explicit JobMetrics(ControllerMetrics* metrics) : metrics_(metrics) {}

  // `job` moves from `from` (UNSPECIFIED: a new job) to `to`; a job that
  // ended loses its per-job series.
  void StateChanged(const v1::Job& job, v1::JobState from, v1::JobState to);
  // A job came back from the store, or left it (pruned).
  void Recovered(v1::JobState state);
  void Pruned(v1::JobState state);
  void Submitted() { metrics_->jobs_submitted->Increment(); }
  void Rejected() { metrics_->jobs_rejected->Increment(); }
  void Restarted() { metrics_->job_restarts->Increment(); }
  // The job's current attempt ended without succeeding.
  void AttemptFailed(v1::FailureClass failure_class);
  // A step of the job's current attempt, merged over its ranks.
  void StepRecorded(const std::string& job_id, const v1::StepMetrics& step);
  void WorkerPool(int64_t workers, int64_t free_slots);

  // Counts events once they are durable (on the store's writer thread).
  metrics::Counter* events_total() const { return metrics_->events_total; }

 private:
  void RankMemory(const std::string& job_id, const v1::RankStepMetrics& rank);
  void RemoveJobSeries(const v1::Job& job);

  ControllerMetrics* const metrics_;
};

}  // namespace accumulus::server
