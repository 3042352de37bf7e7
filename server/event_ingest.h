// A worker's report of its trainers' events, taken into the jobs: each event
// once (by its rank's sequence number), data-parallel steps merged over the
// ranks, the trainer's plan (steps, resumed step, auto micro-batch, a split
// change) folded into Job.batch and the job's progress, and a superseded
// attempt's events recorded as its own (stale) without changing the job.
// Not thread-safe: the JobManager holds its mutex around every call.
#pragma once

#include <cstdint>
#include <string>

#include "accumulus/v1/worker.pb.h"
#include "server/event_recorder.h"
#include "server/job_lifecycle.h"
#include "server/job_metrics.h"
#include "server/rank_reports.h"

namespace accumulus::server {

class EventIngest {
 public:
  EventIngest(JobLifecycle* jobs, RankReports* reports, EventRecorder* recorder,
              JobMetrics* metrics)
      : jobs_(jobs), reports_(reports), recorder_(recorder), metrics_(metrics) {}

  // `link_sequence`: the number of the worker message that carried them (0:
  // none), which a waiting data-parallel step report holds unacknowledged.
  void Record(const std::string& worker_id, const v1::TrainerEvents& events,
              uint64_t link_sequence);

 private:
  // Whether events from `worker_id` of `attempt` (0: untagged) belong to a
  // superseded or ended attempt.
  static bool IsStale(const JobRecord& record, const std::string& worker_id, int32_t attempt);
  void RecordStale(JobRecord* record, const v1::TrainerEvents& events);
  void RecordStep(JobRecord* record, v1::JobEvent event);
  // A runtime or split-change event: the trainer's plan.
  void ApplyPlan(JobRecord* record, const v1::JobEvent& event);

  JobLifecycle* const jobs_;
  RankReports* const reports_;
  EventRecorder* const recorder_;
  JobMetrics* const metrics_;
};

}  // namespace accumulus::server
