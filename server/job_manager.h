// The controller's state: jobs, their event logs, connected workers and the
// device slots they hold; and the rules that move jobs between states.
//
// One mutex guards everything (the compiler checks which member needs it:
// GUARDED_BY, REQUIRES); it guards memory only, and no call blocks while
// holding it: messages to workers are queued, and the store is written by
// its own thread (StoreWriter), which shows events to watchers once they are
// durable.
//
// Who owns what: the Controller owns the JobStore, this JobManager and the
// two gRPC services that call into it. The JobManager owns every job record,
// the worker registry (sessions, slots, senders) and the StoreWriter; each
// job's EventLog is shared with the watch streams reading it, so a stream
// outlives a pruned job. Attempt numbers are assigned here and are the fence
// the worker, its trainers and the checkpoint lineage carry
// (worker/engine/checkpoint_lineage.h). The batch plan (Job.batch) is owned
// here too: the trainers' runtime and split-change events update it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "accumulus/v1/worker.pb.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/controller_metrics.h"
#include "server/event_log.h"
#include "server/job_store.h"
#include "server/store_writer.h"

namespace accumulus::server {

class JobManager {
 public:
  // Queues a message on a worker's link; must not block.
  using WorkerSender = std::function<void(const v1::ControllerMessage&)>;

  // `store` (may be null: state in memory only) receives every job change
  // and event; Recover() reads it back.
  explicit JobManager(ControllerMetrics* metrics, JobStore* store = nullptr)
      : metrics_(metrics), store_(store), writer_(store, metrics->store_errors) {}

  // Runs `done` on the store's writer thread once everything recorded before
  // the call is durable (and its events visible to watchers). `done` must
  // not block; it may call into the JobManager.
  void WhenDurable(std::function<void()> done) EXCLUDES(mutex_);
  // Waits until everything recorded before the call is durable and visible.
  void Flush() EXCLUDES(mutex_);

  // Rebuilds the jobs and their event logs from the store (a controller
  // restart). Queued jobs queue again; placed ones wait for their workers to
  // reconnect and report them, for up to `worker_grace` (Expire()).
  Status Recover(std::chrono::milliseconds worker_grace) EXCLUDES(mutex_);
  // Ranks on workers that did not come back within the grace are lost (the
  // job restarts or fails). Called periodically.
  void Expire() EXCLUDES(mutex_);
  // How many finished jobs (and their events) to keep, in memory and in the
  // store; the oldest beyond go at the next Expire(). 0: all.
  void set_keep_finished(int64_t keep) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    keep_finished_ = keep;
  }

  // Client API ---------------------------------------------------------------

  // Validates the spec (INVALID_ARGUMENT naming the field and value), queues
  // the job and places it if a worker has room.
  StatusOr<v1::Job> Submit(const v1::JobSpec& spec) EXCLUDES(mutex_);
  StatusOr<v1::Job> Get(const std::string& job_id) const EXCLUDES(mutex_);
  std::vector<v1::Job> List() const EXCLUDES(mutex_);
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
  // it no longer reports as running fail.
  uint64_t WorkerConnected(const v1::Register& registration, WorkerSender sender) EXCLUDES(mutex_);
  // The link of `session` ended: the attempts of jobs with ranks there end
  // (they restart or fail), but those ranks may run on until their leases
  // lapse, so their slots stay fenced — the job is not placed again — until
  // `fence_until`, or until the worker reconnects and reports them stopped.
  void WorkerGone(const std::string& worker_id, uint64_t session, const std::string& reason,
                  std::chrono::steady_clock::time_point fence_until) EXCLUDES(mutex_);
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

 private:
  struct JobRecord {
    v1::Job job;
    std::shared_ptr<EventLog> log;
    // Device slots held, by worker; a worker leaves the map when it reports
    // its ranks ended (or is lost).
    std::map<std::string, std::vector<int>> slots;
    // The rendezvous port taken on rank 0's worker (0: none).
    int rendezvous_port = 0;
    std::string rendezvous_worker;
    // Step reports of data-parallel ranks, merged into one event once every
    // rank's has arrived.
    struct RankReport {
      std::string worker_id;
      v1::StepMetrics step;
      int64_t rank_sequence = 0;
      uint64_t link_sequence = 0;  // of the worker message that carried it
    };
    std::map<int64_t, std::vector<RankReport>> pending_steps;
    // The highest JobEvent.rank_sequence received from each (attempt, rank):
    // a resent event (a worker resends what the controller has not
    // acknowledged) is known by its number alone.
    std::map<std::pair<int32_t, int32_t>, int64_t> received;
    // Workers lost with ranks of the job on them, and until when those
    // ranks may still run (time_point::max(): until the worker reports them
    // ended). Their entries in `slots` stay until then.
    std::map<std::string, std::chrono::steady_clock::time_point> fences;
    // The sequence number of the job's newest event (numbered as appended;
    // the log shows it once durable).
    int64_t last_sequence = 0;
  };
  struct WorkerRecord {
    v1::Register registration;
    uint64_t session = 0;
    // The job holding each device slot ("" when free), indexed like
    // registration.devices.
    std::vector<std::string> slot_jobs;
    std::set<std::string> jobs;
    std::set<int> ports_in_use;
    // Jobs whose stale ranks it is stopping (they moved on while it was
    // away): not placed here again until it reports them ended, since a
    // worker runs one attempt of a job at a time.
    std::set<std::string> draining;
    WorkerSender sender;

    int32_t free_slots() const;
  };

  JobRecord* FindLocked(const std::string& job_id) REQUIRES(mutex_);
  void SetStateLocked(JobRecord* record, v1::JobState state, const std::string& reason)
      REQUIRES(mutex_);
  // The ranks of `record` on `worker_id` ended (reported or lost): frees
  // their slots, and the rendezvous port once no rank is left.
  void WorkerLeftJobLocked(JobRecord* record, const std::string& worker_id) REQUIRES(mutex_);
  // A rank of the job ended badly: the attempt is over and its other ranks
  // are stopped. The job restarts (RESTARTING, then queued again once its
  // ranks have stopped) when the failure is not permanent and restarts are
  // left; otherwise it fails (or, while cancelling, is cancelled).
  void EndJobEarlyLocked(JobRecord* record, v1::JobState state, const std::string& reason,
                         bool permanent) REQUIRES(mutex_);
  // Queues a RESTARTING job again once none of its ranks holds a slot.
  void RequeueIfStoppedLocked(JobRecord* record) REQUIRES(mutex_);
  void SendCancelLocked(const JobRecord& record, const std::string& reason) REQUIRES(mutex_);
  bool PlaceLocked(JobRecord* record) REQUIRES(mutex_);
  void ScheduleLocked() REQUIRES(mutex_);
  // An event the job already has: a worker resends its most recent messages
  // after a reconnect, not knowing which ones the controller recorded.
  // Whether `sequence` from `rank` of `attempt` is new (not numbered, or
  // above what the rank sent before), noting it as received.
  bool NoteReceivedLocked(JobRecord* record, int32_t attempt, int32_t rank, int64_t sequence)
      REQUIRES(mutex_);
  // NoteReceived of a trainer's event.
  bool TakeNewLocked(JobRecord* record, int32_t attempt, const v1::JobEvent& event)
      REQUIRES(mutex_);
  // Drops the step reports waiting for other ranks (the attempt ended):
  // they hold back no acknowledgement any more.
  void ClearPendingStepsLocked(JobRecord* record) REQUIRES(mutex_);
  void ReleaseHeldLocked(const JobRecord::RankReport& report) REQUIRES(mutex_);
  void MergeStepLocked(JobRecord* record, const std::string& worker_id, uint64_t link_sequence,
                       v1::JobEvent event) REQUIRES(mutex_);
  void RecordStepLocked(JobRecord* record, v1::JobEvent event) REQUIRES(mutex_);
  void RecordRankMemoryLocked(const std::string& job_id, const v1::RankStepMetrics& rank)
      REQUIRES(mutex_);
  // Appends to the job's log and records the job and the event durably
  // (at once, or at the batch's FlushLocked while batching_).
  void AppendLocked(JobRecord* record, v1::JobEvent event, bool closes) REQUIRES(mutex_);
  void FlushLocked() REQUIRES(mutex_);
  // The ranks of `record` on `worker_id` are gone: the attempt ends.
  void LoseRanksLocked(JobRecord* record, const std::string& worker_id, const std::string& reason)
      REQUIRES(mutex_);
  void RecordEventsLocked(const std::string& worker_id, const v1::TrainerEvents& events,
                          uint64_t link_sequence) REQUIRES(mutex_);
  void RecordStatusLocked(const std::string& worker_id, const v1::AssignmentStatus& status)
      REQUIRES(mutex_);
  // A superseded attempt's rank ended: said in the stream (as stale), and
  // the slots it held as a fence are freed.
  void RecordStaleStatusLocked(JobRecord* record, const std::string& worker_id,
                               const v1::AssignmentStatus& status) REQUIRES(mutex_);
  // Ends fences whose time has come (Expire).
  void ReleaseExpiredFencesLocked() REQUIRES(mutex_);
  // Whether events from `worker_id` of `attempt` (0: untagged) belong to a
  // superseded or ended attempt.
  bool IsStaleLocked(const JobRecord& record, const std::string& worker_id, int32_t attempt) const
      REQUIRES(mutex_);
  // Records a superseded attempt's events as such (stale, with their
  // attempt), each once; they change nothing else.
  void RecordStaleLocked(JobRecord* record, const v1::TrainerEvents& events) REQUIRES(mutex_);
  void UpdateGaugesLocked() REQUIRES(mutex_);
  void PruneFinishedLocked() REQUIRES(mutex_);

  ControllerMetrics* const metrics_;
  JobStore* const store_;

  mutable Mutex mutex_;
  std::map<std::string, JobRecord> jobs_ GUARDED_BY(mutex_);
  std::vector<std::string> job_order_ GUARDED_BY(mutex_);  // submission order
  std::vector<std::string> queue_ GUARDED_BY(mutex_);      // QUEUED jobs, FIFO
  // Ended jobs, oldest first (retention).
  std::deque<std::string> finished_ GUARDED_BY(mutex_);
  std::map<std::string, WorkerRecord> workers_ GUARDED_BY(mutex_);
  // By worker (across its sessions): the link sequences of step reports
  // waiting in pending_steps, which are not durable yet.
  std::map<std::string, std::multiset<uint64_t>> held_link_sequences_ GUARDED_BY(mutex_);
  int64_t next_job_number_ GUARDED_BY(mutex_) = 1;
  int64_t keep_finished_ GUARDED_BY(mutex_) = 0;
  // Events numbered but not yet handed to the writer (see AppendLocked),
  // and what is to run once they are durable.
  struct PendingEvent {
    JobRecord* record;
    v1::JobEvent event;
    bool closes;
  };
  std::vector<PendingEvent> unflushed_ GUARDED_BY(mutex_);
  std::vector<std::string> unflushed_deletions_ GUARDED_BY(mutex_);
  std::vector<std::function<void()>> after_durable_ GUARDED_BY(mutex_);
  bool batching_ GUARDED_BY(mutex_) = false;
  // After a restart: workers that recovered jobs have ranks on, and until
  // when they may reconnect to claim them.
  std::map<std::string, std::chrono::steady_clock::time_point> awaited_workers_ GUARDED_BY(mutex_);
  uint64_t next_session_ GUARDED_BY(mutex_) = 1;

  // Last: destroyed first, it commits what is queued while the rest lives.
  StoreWriter writer_;
};

}  // namespace accumulus::server
