// The controller's writes to its store, on a thread of their own: the job
// manager queues each change (a job's snapshot and its new events) under its
// lock, which guards memory only, and this thread commits what has queued
// meanwhile in one transaction, then runs each batch's completion in order —
// which is where events become visible to watchers and worker messages are
// acknowledged, so both happen only once the events are durable. No SQLite
// call runs under the job manager's lock or on a gRPC thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/metrics/registry.h"
#include "common/mutex.h"
#include "server/job_store.h"

namespace accumulus::server {

class StoreWriter {
 public:
  // A job's snapshot as of the change, and its new events in sequence order.
  struct Change {
    v1::Job job;
    std::vector<v1::JobEvent> events;
  };
  // Runs on the writer thread once its batch is committed (or the commit
  // failed: the error is logged and counted, and the controller carries on
  // with what it holds in memory), with the batch's changes to take from.
  using Committed = std::function<void(std::vector<Change>* changes)>;

  // `store` null: nothing is written; completions still run, in order, on
  // the writer thread.
  StoreWriter(JobStore* store, metrics::Counter* store_errors);
  // Commits everything queued and runs its completions first.
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  // Queues one batch: its changes, then the jobs to delete. Never blocks on
  // the store. `committed` may be empty.
  void Submit(std::vector<Change> changes, std::vector<std::string> deletions, Committed committed)
      EXCLUDES(mutex_);

  // Waits until every batch submitted before the call is committed and its
  // completion has run.
  void Flush() EXCLUDES(mutex_);

 private:
  struct Batch {
    std::vector<Change> changes;
    std::vector<std::string> deletions;
    Committed committed;
  };
  void Run() EXCLUDES(mutex_);
  // One transaction for all of `batches`.
  void Commit(const std::vector<Batch>& batches);

  JobStore* const store_;
  metrics::Counter* const store_errors_;

  Mutex mutex_;
  CondVar changed_;
  std::deque<Batch> queue_ GUARDED_BY(mutex_);
  uint64_t submitted_ GUARDED_BY(mutex_) = 0;
  uint64_t completed_ GUARDED_BY(mutex_) = 0;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: it starts once the rest is ready
};

}  // namespace accumulus::server
