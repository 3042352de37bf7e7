// The events of one job, in sequence order, and the watchers following them.
//
// The log is the watchers' queue: each watcher keeps its own cursor (the next
// sequence number it wants) and reads from the log at its own pace, so a slow
// watcher never makes an append wait and never holds events of its own.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/mutex.h"

namespace accumulus::server {

class EventLog {
 public:
  // Told that the log has grown or closed. Called without the log's lock
  // held; must not block.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void OnEventsAvailable() = 0;
  };

  explicit EventLog(std::string job_id) : job_id_(std::move(job_id)) {}

  // Stamps `event` with the job id and the next sequence number (from 1) and
  // stores it; `closes` marks the job's final event (for now: an event
  // appended after it, when a job is resumed, opens the log again). Listeners are not told:
  // call Notify() once the caller has released its own locks.
  const v1::JobEvent& Append(v1::JobEvent event, bool closes);

  // Refills the log of a recovered job: `events` as stored (sequences 1..n),
  // closed when the job had ended.
  void Restore(std::vector<v1::JobEvent> events, bool closed);

  // Tells every listener that the log changed.
  void Notify();

  // The event with sequence number `after + 1`, if recorded.
  bool Read(int64_t after, v1::JobEvent* out) const;
  // The highest sequence number recorded (0: none).
  int64_t last_sequence() const;
  // True once the final event was appended.
  bool closed() const;

  // The controller is stopping: each stream ends once it has sent what is
  // recorded, and a stream that starts now ends at once (the watcher
  // continues after its last event at the next controller). Notifies.
  void EndStreams();
  bool streams_ended() const;

  void Subscribe(std::shared_ptr<Listener> listener);
  void Unsubscribe(const Listener* listener);

 private:
  const std::string job_id_;
  mutable Mutex mutex_;
  std::vector<v1::JobEvent> events_ GUARDED_BY(mutex_);  // events_[i].sequence() == i + 1
  bool closed_ GUARDED_BY(mutex_) = false;
  bool streams_ended_ GUARDED_BY(mutex_) = false;
  std::vector<std::shared_ptr<Listener>> listeners_ GUARDED_BY(mutex_);
};

}  // namespace accumulus::server
