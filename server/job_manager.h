// The controller's state — jobs, their event logs, connected workers and the
// device slots they hold — behind one facade, whose calls come from the gRPC
// services.
//
// The work is done by parts with one job each: the JobLifecycle (jobs,
// attempts, the queue, retention), the WorkerRegistry (sessions,
// slots, ports), the Scheduler (placement), EventIngest and RankReports (a
// worker's trainer events: dedup by sequence number, the rank merge, what
// may be acknowledged), the EventRecorder (numbering; durable, then shown)
// and JobMetrics. One mutex guards them all: each is a plain class and a
// member GUARDED_BY it, so the compiler checks that every call holds it. It
// guards memory only, and nothing blocks while it is held: messages to
// workers are queued, and the store is written by its own thread
// (StoreWriter), which shows events to watchers once they are durable.
//
// Who owns what: the Controller owns the JobStore, this JobManager and the
// two gRPC services that call into it. The JobManager owns the parts and the
// StoreWriter; each job's EventLog is shared with the watch streams reading
// it, so a stream outlives a pruned job. Attempt numbers are assigned here
// and are the fence the worker, its trainers and the checkpoint lineage
// carry (worker/engine/checkpoint_lineage.h). The batch plan (Job.batch) is
// owned here too: the trainers' runtime and split-change events update it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "accumulus/v1/worker.pb.h"
#include "common/awake_clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/controller_metrics.h"
#include "server/event_ingest.h"
#include "server/event_log.h"
#include "server/event_recorder.h"
#include "server/job_lifecycle.h"
#include "server/job_metrics.h"
#include "server/job_store.h"
#include "server/rank_reports.h"
#include "server/scheduler.h"
#include "server/store_writer.h"
#include "server/submit_rate_limit.h"
#include "server/worker_registry.h"

namespace accumulus::server {

class JobManager {
 public:
  // Queues a message on a worker's link; must not block.
  using WorkerSender = WorkerRegistry::Sender;

  // The newest events of a job its log keeps in memory by default (with an
  // archive): a few megabytes however long the job runs.
  static constexpr size_t kEventsInMemory = 4096;

  // `store` (may be null: state in memory only) receives every job change
  // and event; Recover() reads it back. `archive` (the store's events, read
  // on a connection of its own; may be null) lets each job keep only its
  // newest `events_in_memory` events in memory, older ones read from the
  // store when a watcher replays them; without one, every event stays.
  // `clock` measures how long workers may stay away (WorkerGone, Recover).
  JobManager(ControllerMetrics* metrics, AwakeClock* clock, JobStore* store = nullptr,
             EventArchive* archive = nullptr, size_t events_in_memory = kEventsInMemory)
      : clock_(clock),
        store_(store),
        events_in_memory_(archive != nullptr ? events_in_memory : 0),
        metrics_(metrics),
        recorder_(&writer_, metrics->events_total),
        jobs_(&workers_, &reports_, &recorder_, &metrics_, archive, events_in_memory_),
        scheduler_(&jobs_, &workers_, &recorder_, &metrics_),
        ingest_(&jobs_, &reports_, &recorder_, &metrics_),
        writer_(store, metrics->store_errors, metrics->store_writable) {}

  // Runs `done` on the store's writer thread once everything recorded before
  // the call is durable (and its events visible to watchers), with OK; or
  // with UNAVAILABLE when it never will be (EventRecorder::Durable). `done`
  // must not block; it may call into the JobManager.
  void WhenDurable(EventRecorder::Durable done) EXCLUDES(mutex_);
  // Waits until everything recorded before the call is durable and visible.
  void Flush() EXCLUDES(mutex_);

  // Rebuilds the jobs and their event logs from the store (a controller
  // restart). Queued jobs queue again; placed ones wait for their workers to
  // reconnect and report them, for up to `worker_grace` (Expire()). Called
  // once, on an empty JobManager, before the services start.
  Status Recover(std::chrono::milliseconds worker_grace) EXCLUDES(mutex_);
  // Ranks on workers that did not come back within the grace are lost (the
  // job restarts or fails). Called periodically.
  void Expire() EXCLUDES(mutex_);
  // How many finished jobs (and their events) to keep, in memory and in the
  // store; the oldest beyond go at the next Expire(). 0: all.
  void set_keep_finished(int64_t keep) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    jobs_.set_keep_finished(keep);
  }
  // How many unfinished jobs there may be, in all and of one owner (0: no
  // limit); a submit or resume beyond is refused (ActiveJobQuota).
  void set_max_active_jobs(int64_t total, int64_t per_owner) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    jobs_.set_active_limits(total, per_owner);
  }
  // How many jobs one owner may submit a minute (0: no limit); a submit
  // beyond is refused (SubmitRateLimit). A retry of a request is not one.
  void set_max_submits_per_minute(int64_t per_owner) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    submit_rate_.set_per_minute(per_owner);
  }
  // How long a finished job's series stay on /metrics (JobMetrics).
  void set_finished_job_metrics_retention(std::chrono::milliseconds retention) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    metrics_.set_retention(retention);
  }

  // Client API ---------------------------------------------------------------

  // Validates the spec (INVALID_ARGUMENT naming the field and value), queues
  // the job, owned by `owner`, and places it if a worker has room. With a
  // `request_id` that `owner` gave a kept job before, returns that job
  // instead (ALREADY_EXISTS if its spec differs).
  StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const std::string& owner,
                           const std::string& request_id = "") EXCLUDES(mutex_);
  StatusOr<v1::Job> Get(const std::string& job_id) const EXCLUDES(mutex_);
  // Every job, in submission order (whole jobs: for tests and tools).
  std::vector<v1::Job> List() const EXCLUDES(mutex_);
  // A page of summaries (ListJobs); INVALID_ARGUMENT for a bad request.
  StatusOr<v1::ListJobsResponse> ListPage(const v1::ListJobsRequest& request) const
      EXCLUDES(mutex_);
  // QUEUED jobs end CANCELLED at once; placed ones go CANCELLING until their
  // worker confirms. FAILED_PRECONDITION for finished jobs.
  StatusOr<v1::Job> Cancel(const std::string& job_id, const std::string& reason) EXCLUDES(mutex_);
  // A cancelled or failed job queued again as a new attempt (resuming from
  // its newest checkpoint); FAILED_PRECONDITION for any other state.
  StatusOr<v1::Job> Resume(const std::string& job_id) EXCLUDES(mutex_);
  StatusOr<std::shared_ptr<EventLog>> Events(const std::string& job_id) const EXCLUDES(mutex_);
  std::vector<v1::WorkerInfo> Workers() const EXCLUDES(mutex_);

  // Worker link ---------------------------------------------------------------

  // A worker (re)connected. Returns a session number for WorkerGone. A worker
  // that reconnects replaces its previous session; jobs with ranks there that
  // it no longer reports as running fail, and those it still runs go on
  // (told to stop if their attempt ended meanwhile).
  uint64_t WorkerConnected(const v1::Register& registration, WorkerSender sender) EXCLUDES(mutex_);
  // The controller is stopping: from now on a worker's link that ends
  // changes nothing (its ranks keep running and the worker reconnects to
  // the next controller, as after a crash), and every watch stream ends
  // once it has sent what is recorded (EventLog::EndStreams).
  void BeginShutdown() EXCLUDES(mutex_);
  // The link of `session` ended. Its ranks may run on until their leases
  // lapse, which is before `lost_after` (the last time the worker was heard
  // from, plus the lost-worker timeout). Until then the worker may
  // reconnect and keep the jobs it still runs — a link that broke (a
  // network blip, a proxy's reset) costs no attempt — and the jobs are not
  // placed again; at `lost_after` (at once if it has passed: a silent
  // worker) their ranks there are lost, and the attempts restart or fail.
  void WorkerGone(const std::string& worker_id, uint64_t session, const std::string& reason,
                  AwakeClock::time_point lost_after) EXCLUDES(mutex_);
  // `link_sequence`: the WorkerMessage's number (0: none), for
  // AcknowledgeableUpTo.
  void RecordEvents(const std::string& worker_id, const v1::TrainerEvents& events,
                    uint64_t link_sequence = 0) EXCLUDES(mutex_);
  // Of the worker's messages up to `processed` (all recorded or found
  // resent), the highest whose events are all durable: a data-parallel
  // step report waiting in memory for the other ranks' holds the
  // acknowledgement back to just before its message.
  uint64_t AcknowledgeableUpTo(const std::string& worker_id, uint64_t processed) const
      EXCLUDES(mutex_);
  void RecordStatus(const std::string& worker_id, const v1::AssignmentStatus& status)
      EXCLUDES(mutex_);
  // One worker message in one batch of the store writer: its events, its
  // status unless `new_status` is false (the link has seen it before), and
  // then `when_durable`, on the writer thread, once all of it is durable
  // (EventRecorder::Durable).
  void RecordMessage(const std::string& worker_id, const v1::WorkerMessage& message,
                     bool new_status, EventRecorder::Durable when_durable) EXCLUDES(mutex_);

 private:
  // OK, or UNAVAILABLE while the store cannot write: a change requested now
  // would wait for the disk, so it is refused before anything is changed
  // (`what`: "submitted", "cancelled", ...).
  Status RefuseWhileUnwritable(const std::string& what) const REQUIRES(mutex_);
  // The ranks an awaited worker left placed (after a controller restart, or
  // a link that broke) are its again, now it reconnected.
  void ClaimAwaitedRanks(const std::string& worker_id, WorkerRegistry::Worker* worker)
      REQUIRES(mutex_);
  // Ranks it still runs whose attempt ended while it was away (cancelled,
  // or another rank failed) are told to stop: the news found no link then.
  void StopEndedAttempts(const std::string& worker_id, const WorkerRegistry::Worker& worker,
                         const std::set<std::string>& still_running) REQUIRES(mutex_);
  void RecordDroppedMessages(const v1::Register& registration) REQUIRES(mutex_);
  void StopRanksNotPlaced(const std::string& worker_id, WorkerRegistry::Worker* worker,
                          const std::set<std::string>& still_running) REQUIRES(mutex_);
  // Awaited workers that did not come back in time: their ranks are lost.
  // Whether any were.
  bool LoseAwaitedWorkers(AwakeClock::time_point now) REQUIRES(mutex_);

  AwakeClock* const clock_;
  JobStore* const store_;
  // What a recovered job's log keeps (0: every event).
  const size_t events_in_memory_;

  // The parts, one job each (see their headers); plain classes that take the
  // lock on trust, so every one of them is guarded by the one mutex.
  mutable Mutex mutex_;
  bool shutting_down_ GUARDED_BY(mutex_) = false;
  JobMetrics metrics_ GUARDED_BY(mutex_);
  WorkerRegistry workers_ GUARDED_BY(mutex_);
  RankReports reports_ GUARDED_BY(mutex_);
  EventRecorder recorder_ GUARDED_BY(mutex_);
  JobLifecycle jobs_ GUARDED_BY(mutex_);
  SubmitRateLimit submit_rate_ GUARDED_BY(mutex_);
  Scheduler scheduler_ GUARDED_BY(mutex_);
  EventIngest ingest_ GUARDED_BY(mutex_);
  // Workers that jobs have ranks on and that are not connected — after a
  // controller restart, or since their link broke — with until when they
  // may reconnect to claim them, and what their ranks' loss says then.
  struct AwaitedWorker {
    AwakeClock::time_point until;
    std::string lost_because;
  };
  std::map<std::string, AwaitedWorker> awaited_workers_ GUARDED_BY(mutex_);

  // Last: destroyed first, it commits what is queued while the rest lives.
  StoreWriter writer_;
};

}  // namespace accumulus::server
