// The controller's writes to its store, on a thread of their own: the job
// manager queues each change (a job's snapshot and its new events) under its
// lock, which guards memory only, and this thread commits what has queued
// meanwhile in one transaction, then runs each batch's completion in order —
// which is where events become visible to watchers, worker messages are
// acknowledged and state-changing calls answered, so all three happen only
// once the events are durable. No SQLite call runs under the job manager's
// lock or on a gRPC thread.
//
// A commit that may succeed later (a full disk, an I/O error, a lock held
// by a backup) is retried, with what queued meanwhile, until it does: its
// completions wait, so no worker message is acknowledged that a restart
// would lose — the workers keep it and send it again to the next controller.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/metrics/registry.h"
#include "common/mutex.h"
#include "common/status.h"
#include "server/job_store.h"

namespace accumulus::server {

class StoreWriter {
 public:
  // A job's snapshot as of the change, and its new events in sequence order.
  struct Change {
    v1::Job job;
    std::vector<v1::JobEvent> events;
  };
  // Runs on the writer thread once its batch is committed, with the batch's
  // changes to take from. `outcome` is OK then — and also when the store
  // refused the batch for good (a bug, or a damaged file: the error is
  // logged and counted, and the controller carries on with what it holds in
  // memory). It is UNAVAILABLE when the batch will not be durable: the store
  // could not write when StopRetrying came.
  using Committed = std::function<void(const Status& outcome, std::vector<Change>* changes)>;

  // `store` null: nothing is written; completions still run, in order, on
  // the writer thread. `store_errors` counts failed commits (each retry
  // too); `store_writable` is 1, or 0 while commits are being retried.
  StoreWriter(JobStore* store, metrics::Counter* store_errors, metrics::Gauge* store_writable);
  // StopRetrying, then commits everything queued and runs its completions.
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Queues one batch: its changes, then the jobs to delete. Never blocks on
  // the store. `committed` may be empty.
  void Submit(std::vector<Change> changes, std::vector<std::string> deletions, Committed committed)
      EXCLUDES(mutex_);

  // Waits until every batch submitted before the call is committed and its
  // completion has run (while the store cannot write: until it can, or
  // StopRetrying).
  void Flush() EXCLUDES(mutex_);

  // OK, or UNAVAILABLE with the store's error while its commits fail and
  // are retried: a caller about to change the state can refuse up front
  // instead of waiting for a write that may not come.
  Status Writable() const EXCLUDES(mutex_);

  // From now on a commit that the store cannot make is tried once more, not
  // retried: its batches complete with UNAVAILABLE. For a shutdown, which
  // must not wait for a disk.
  void StopRetrying() EXCLUDES(mutex_);

 private:
  struct Batch {
    std::vector<Change> changes;
    std::vector<std::string> deletions;
    Committed committed;
  };
  void Run() EXCLUDES(mutex_);
  // One transaction for all of `batches`: OK, the store's UNAVAILABLE (try
  // again), or OK after logging and counting an error it gives for good.
  Status Commit(const std::vector<Batch>& batches);
  // Takes what has queued into `pending`: at once when `pending` is empty
  // (waiting for a batch), else after `retry_at` (or StopRetrying). False
  // when there is nothing to do any more.
  bool Take(std::vector<Batch>* pending, std::chrono::steady_clock::time_point retry_at,
            bool* retry) EXCLUDES(mutex_);
  // Notes the outcome of a commit of `batches` batches for Writable, the
  // gauge and the log (outside the lock). On the writer thread.
  void Note(const Status& outcome, size_t batches) EXCLUDES(mutex_);

  JobStore* const store_;
  metrics::Counter* const store_errors_;
  metrics::Gauge* const store_writable_;

  mutable Mutex mutex_;
  CondVar changed_;
  std::deque<Batch> queue_ GUARDED_BY(mutex_);
  uint64_t submitted_ GUARDED_BY(mutex_) = 0;
  uint64_t completed_ GUARDED_BY(mutex_) = 0;
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool retrying_ GUARDED_BY(mutex_) = true;
  // The error of the commits being retried; OK while the store writes.
  Status failing_ GUARDED_BY(mutex_);
  // The writer thread's alone (Note): failed commits in a row, since when.
  int64_t failed_commits_ = 0;
  std::chrono::steady_clock::time_point failing_since_;
  std::thread thread_;  // last: it starts once the rest is ready
};

}  // namespace accumulus::server
