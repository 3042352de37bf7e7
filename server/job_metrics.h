// The job manager's Prometheus series: jobs by state, each job's progress,
// and per rank its phases and memory; the worker pool's gauges. The job
// manager calls it as jobs change (under its lock, like its other parts), so
// a series always says what the job records say.
//
// A finished job's series stay for `retention` (its last loss, its memory
// peak can still be read and graphed), then go: the series exposed are
// bounded by the jobs running plus those finished within the retention,
// however many jobs the controller has run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "server/controller_metrics.h"

namespace accumulus::server {

class JobMetrics {
 public:
  using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;

  explicit JobMetrics(ControllerMetrics* metrics, SteadyClock now = std::chrono::steady_clock::now)
      : metrics_(metrics), now_(std::move(now)) {}

  // How long a finished job's series stay (0: they go at once).
  void set_retention(std::chrono::milliseconds retention) { retention_ = retention; }

  // `job` moves from `from` (UNSPECIFIED: a new job) to `to`.
  void StateChanged(const v1::Job& job, v1::JobState from, v1::JobState to);
  // A job came back from the store, or left it (pruned).
  void Recovered(const v1::Job& job);
  void Pruned(v1::JobState state);
  void Submitted() { metrics_->jobs_submitted->Increment(); }
  void Rejected() { metrics_->jobs_rejected->Increment(); }
  void Restarted() { metrics_->job_restarts->Increment(); }
  // The job's current attempt ended without succeeding.
  void AttemptFailed(v1::FailureClass failure_class);
  // A step of the job's current attempt, merged over its ranks.
  void StepRecorded(const v1::Job& job, const v1::StepMetrics& step);
  // A rank ran out of memory and runs the window again with a smaller split.
  void SplitChanged(const v1::Job& job, const v1::SplitChange& split);
  void CheckpointWritten(const v1::Job& job);
  void CheckpointFailed(const v1::Job& job);
  // Adaptive accumulation changed the job's global batch.
  void BatchChanged(const v1::Job& job);
  void WorkerPool(int64_t workers, int64_t slots, int64_t free_slots);
  void WorkerLost() { metrics_->workers_lost->Increment(); }
  // Drops the series of jobs finished longer than the retention ago.
  void ExpireFinished();

  // Counts events once they are durable (on the store's writer thread).
  metrics::Counter* events_total() const { return metrics_->events_total; }

 private:
  // What was exported for one job, to take it away again.
  struct Series {
    std::set<std::vector<std::string>> rank_labels;  // job_id, rank, worker_id
    // Allocator retries are counted since each trainer process started.
    std::map<int32_t, int64_t> allocator_retries;
    std::optional<std::chrono::steady_clock::time_point> queued_since;
    // Set while the job is finished: when its series go.
    std::optional<std::chrono::steady_clock::time_point> expires_at;
  };

  void Rank(const v1::Job& job, Series* series, const v1::RankStepMetrics& rank);
  // job_id, rank, worker_id; an empty `worker_id` is the rank's placement's
  // (else the job's worker).
  std::vector<std::string> RankLabels(const v1::Job& job, int32_t rank,
                                      const std::string& worker_id) const;
  void RemoveRankSeries(Series* series);
  void RemoveJobSeries(const std::string& job_id);

  ControllerMetrics* const metrics_;
  const SteadyClock now_;
  std::chrono::milliseconds retention_{0};
  std::map<std::string, Series> series_;
  // Finished jobs by when their series go (ordered whatever the retention
  // was when each finished).
  std::multimap<std::chrono::steady_clock::time_point, std::string> expiring_;
};

}  // namespace accumulus::server
