// Numbers each job's events as they happen and hands them, with the job's
// snapshot, to the StoreWriter, which makes them durable and only then shows
// them to the job's watchers (and runs what waits for them: replies to
// clients, acknowledgements to workers). A batch scope collects one worker
// message's (or one client call's) records into one writer batch. Not
// thread-safe: the JobManager holds its mutex around every call.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "server/job_record.h"
#include "server/store_writer.h"

namespace accumulus::server {

class EventRecorder {
 public:
  // `events_total` counts events as they become durable.
  EventRecorder(StoreWriter* writer, metrics::Counter* events_total)
      : writer_(writer), events_total_(events_total) {}

  // Until the outermost Batch ends, records are collected instead of handed
  // to the writer one by one. A job recorded in a batch must not be deleted
  // (pruned) before the batch ends: the job's snapshot is taken then.
  class Batch {
   public:
    explicit Batch(EventRecorder* recorder) : recorder_(recorder) { ++recorder_->batch_depth_; }
    ~Batch() {
      if (--recorder_->batch_depth_ == 0) recorder_->Submit();
    }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    EventRecorder* const recorder_;
  };

  // Numbers `event` as the job's next, stamps job id and time (unless it has
  // one), and records it with the job as it is now. `closes`: the job's
  // final event (watchers end there); an event added to an ended job (a
  // superseded attempt's late report) keeps the stream closed as well.
  void Append(JobRecord* record, v1::JobEvent event, bool closes);
  // Deletes the job and its events from the store.
  void Delete(const std::string& job_id);
  // What waits for the records before it: called with OK once they are
  // durable, or UNAVAILABLE (the store's error) when they never will be —
  // the controller is stopping while its store cannot write.
  using Durable = std::function<void(const Status& outcome)>;
  // Runs `done` on the writer thread once everything recorded so far is
  // durable (or will not be). `done` must not block.
  void WhenDurable(Durable done);

 private:
  void SubmitUnlessBatching() {
    if (batch_depth_ == 0) Submit();
  }
  void Submit();

  struct Pending {
    JobRecord* record;
    v1::JobEvent event;
    bool closes;
  };

  StoreWriter* const writer_;
  metrics::Counter* const events_total_;
  std::vector<Pending> events_;
  std::vector<std::string> deletions_;
  std::vector<Durable> after_durable_;
  int batch_depth_ = 0;
};

}  // namespace accumulus::server
