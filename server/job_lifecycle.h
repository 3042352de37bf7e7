// The jobs and the rules that move them between states: attempts (each one's
// number is the fence its worker, trainers and checkpoint lineage carry),
// restarts, cancellation, the ranks a job holds on workers (held while
// their worker is away until they may no longer run: JobManager::WorkerGone),
// the FIFO queue of waiting jobs and the retention of finished ones.
//
// It records every change through the EventRecorder and never schedules:
// the JobManager runs the Scheduler after the calls that may free slots or
// queue jobs. Not thread-safe: the JobManager holds its mutex around every
// call (the member is GUARDED_BY it, which the compiler checks).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "accumulus/v1/worker.pb.h"
#include "common/status.h"
#include "server/active_job_quota.h"
#include "server/event_archive.h"
#include "server/event_recorder.h"
#include "server/finished_jobs.h"
#include "server/job_listing.h"
#include "server/job_metrics.h"
#include "server/job_record.h"
#include "server/job_store.h"
#include "server/rank_reports.h"
#include "server/worker_registry.h"

namespace accumulus::server {

class JobLifecycle {
 public:
  // With an `archive` (the state database's events), each job's log keeps
  // its newest `events_in_memory` events and reads older ones from there;
  // without one, a log keeps every event.
  JobLifecycle(WorkerRegistry* workers, RankReports* reports, EventRecorder* recorder,
               JobMetrics* metrics, EventArchive* archive = nullptr, size_t events_in_memory = 0)
      : workers_(workers),
        reports_(reports),
        recorder_(recorder),
        metrics_(metrics),
        archive_(archive),
        events_in_memory_(events_in_memory) {}

  // A new job (attempt 1) with a new id, owned by `owner`, queued;
  // `request_id` ("": none) finds it again (FindRequest).
  JobRecord& Submit(v1::JobSpec spec, v1::BatchPlan batch, const std::string& owner,
                    const std::string& request_id);
  // A job read back from the store; a queued one queues again. The caller
  // waits for the workers of a placed one, and tells RankReports what its
  // events were.
  JobRecord& Restore(JobStore::StoredJob stored);

  JobRecord* Find(const std::string& job_id);
  const JobRecord* Find(const std::string& job_id) const;
  // The kept job `owner` submitted with `request_id`, or null.
  const JobRecord* FindRequest(const std::string& owner, const std::string& request_id) const;
  std::map<std::string, JobRecord>& jobs() { return jobs_; }
  // In submission order.
  std::vector<v1::Job> List() const;
  // Every job's event log.
  std::vector<std::shared_ptr<EventLog>> Logs() const;
  // One page of the jobs that match `query`, in submission order, and the
  // token of the next page if there may be more. Looks at no more than
  // kMaxJobsScannedPerPage jobs.
  v1::ListJobsResponse ListPage(const ListQuery& query) const;
  // QUEUED jobs, FIFO (the Scheduler takes from it).
  std::vector<std::string>& queue() { return queue_; }

  // See JobManager::Cancel and Resume.
  StatusOr<v1::Job> Cancel(const std::string& job_id, const std::string& reason);
  StatusOr<v1::Job> Resume(const std::string& job_id);

  // `failure_class`: why a FAILED, CANCELLED or RESTARTING job is so
  // (Job.failure_class); any other state clears it.
  void SetState(JobRecord* record, v1::JobState state, const std::string& reason,
                v1::FailureClass failure_class = v1::FAILURE_CLASS_UNSPECIFIED);
  // A rank of the job ended badly: the attempt is over and its other ranks
  // are stopped. The job restarts (RESTARTING, then queued again once its
  // ranks have stopped) if it has max_restarts left — or, when its worker
  // shut down (PREEMPTED), spending none — unless retrying would fail the
  // same way (`permanent`: a bad spec or data); otherwise it fails (or,
  // while cancelling, is cancelled).
  void EndEarly(JobRecord* record, v1::JobState state, const std::string& reason,
                v1::FailureClass failure_class, bool permanent = false);
  // Queues a RESTARTING job again, ahead of the others, once none of its
  // ranks holds a slot.
  void RequeueIfStopped(JobRecord* record);
  // The ranks of `record` on `worker_id` ended (reported or lost): frees
  // their slots, and the rendezvous port once no rank is left.
  void LeaveWorker(JobRecord* record, const std::string& worker_id);
  // The ranks of `record` on `worker_id` are gone: the attempt ends.
  void LoseRanks(JobRecord* record, const std::string& worker_id, const std::string& reason);
  // Asks every worker with ranks of the job to stop them.
  void SendCancel(const JobRecord& record, const std::string& reason);

  // A rank reported its state (the worker's AssignmentStatus).
  void RankStatus(const std::string& worker_id, const v1::AssignmentStatus& status);

  // How many finished jobs (and their events) to keep; 0: all.
  void set_keep_finished(int64_t keep) { keep_finished_ = keep; }
  // The unfinished jobs, counted in all and per owner, and their limits: a
  // submit asks active_jobs().Admit first; Resume does.
  const ActiveJobQuota& active_jobs() const { return active_; }
  void set_active_limits(int64_t total, int64_t per_owner) { active_.set_limits(total, per_owner); }
  // Deletes finished jobs beyond the retention, the fullest owner's oldest
  // first (FinishedJobs), except those whose ranks are still stopping (they
  // hold slots until they report).
  void Prune();

 private:
  // A superseded attempt's rank ended: said in the stream (as stale), and
  // the slots it held are freed.
  void StaleRankStatus(JobRecord* record, const std::string& worker_id,
                       const v1::AssignmentStatus& status);
  // Adds the current attempt to the job's history; returns its record.
  static v1::Attempt* RecordAttempt(v1::Job* job, const std::string& reason,
                                    v1::FailureClass failure_class,
                                    const google::protobuf::Timestamp& ended_at);
  // Counts the current attempt's failure, once.
  void CountFailedAttempt(JobRecord* record, v1::FailureClass failure_class);
  // The next attempt's number; its progress starts unknown.
  static void NextAttempt(v1::Job* job);
  // A job's event log, bounded as set_event_archive says.
  std::shared_ptr<EventLog> NewLog(const std::string& job_id) const;
  // Now, or just after the newest job's submission time if the clock says
  // otherwise.
  google::protobuf::Timestamp SubmissionTime();

  WorkerRegistry* const workers_;
  RankReports* const reports_;
  EventRecorder* const recorder_;
  JobMetrics* const metrics_;
  EventArchive* const archive_;
  const size_t events_in_memory_;

  std::map<std::string, JobRecord> jobs_;
  std::set<ListPosition> order_;  // submission order
  ListPosition last_submitted_;
  std::vector<std::string> queue_;
  FinishedJobs finished_;
  // (owner, request_id) → job id, for the jobs kept that were given one.
  std::map<std::pair<std::string, std::string>, std::string> requests_;
  int64_t keep_finished_ = 0;
  ActiveJobQuota active_;  // kept by SetState and Restore
};

}  // namespace accumulus::server
