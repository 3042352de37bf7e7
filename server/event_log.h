// The events of one job, in sequence order, and the watchers following them.
//
// The log is the watchers' queue: each watcher keeps its own cursor (the next
// sequence number it wants) and reads from the log at its own pace, so a slow
// watcher never makes an append wait and never holds events of its own.
//
// Memory: the log keeps the job's newest events (Options::keep) and reads
// older ones, for a watcher that replays from far back, from the state
// database (Options::older), where every event is before a log shows it. A
// job of a million steps costs the controller what one of a few thousand
// does.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/mutex.h"
#include "common/status.h"

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

  // Up to `max` of the job's events after sequence number `after`, as
  // stored.
  using OlderEvents = std::function<StatusOr<std::vector<v1::JobEvent>>(int64_t after, int max)>;
  struct Options {
    // The newest events kept in memory; without `older`, every event is.
    size_t keep = 1;
    OlderEvents older;
  };

  explicit EventLog(std::string job_id) : EventLog(std::move(job_id), Options{0, nullptr}) {}
  EventLog(std::string job_id, Options options);

  // Stamps `event` with the job id and the next sequence number (from 1) and
  // stores it; `closes` marks the job's final event (for now: an event
  // appended after it, when a job is resumed, opens the log again). Listeners are not told:
  // call Notify() once the caller has released its own locks.
  const v1::JobEvent& Append(v1::JobEvent event, bool closes);

  // Refills the log of a recovered job: the newest of its stored events
  // (`newest`, consecutive, the last one numbered `last_sequence`), closed
  // when the job had ended.
  void Restore(std::vector<v1::JobEvent> newest, int64_t last_sequence, bool closed);

  // Tells every listener that the log changed.
  void Notify();

  // Appends to `out` the events after sequence number `after`, at most
  // `max` of them, from memory or (outside the log's lock) from the
  // database; none when there are none yet. An error: the database could
  // not give them.
  Status ReadAfter(int64_t after, int max, std::deque<v1::JobEvent>* out) const;
  // The highest sequence number recorded (0: none).
  int64_t last_sequence() const;
  // Events held in memory.
  size_t events_in_memory() const;
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
  // Drops the oldest events beyond `keep` (never without `older`).
  void TrimLocked() REQUIRES(mutex_);

  const std::string job_id_;
  const Options options_;
  mutable Mutex mutex_;
  // The newest events: recent_[i].sequence() == last_ - recent_.size() + 1 + i.
  std::deque<v1::JobEvent> recent_ GUARDED_BY(mutex_);
  int64_t last_ GUARDED_BY(mutex_) = 0;
  bool closed_ GUARDED_BY(mutex_) = false;
  bool streams_ended_ GUARDED_BY(mutex_) = false;
  std::vector<std::shared_ptr<Listener>> listeners_ GUARDED_BY(mutex_);
};

}  // namespace accumulus::server
