#include "server/event_log.h"

#include <algorithm>

#include "common/clock.h"
#include "common/mutex.h"

namespace accumulus::server {

const v1::JobEvent& EventLog::Append(v1::JobEvent event, bool closes) {
  MutexLock lock(&mutex_);
  event.set_job_id(job_id_);
  event.set_sequence(static_cast<int64_t>(events_.size()) + 1);
  if (!event.has_time()) {
    *event.mutable_time() = Now();
  }
  events_.push_back(std::move(event));
  // The latest event decides: a resumed job's log opens again.
  closed_ = closes;
  return events_.back();
}

void EventLog::Notify() {
  std::vector<std::shared_ptr<Listener>> listeners;
  {
    MutexLock lock(&mutex_);
    listeners = listeners_;
  }
  for (const auto& l : listeners) l->OnEventsAvailable();
}

bool EventLog::Read(int64_t after, v1::JobEvent* out) const {
  MutexLock lock(&mutex_);
  if (after < 0 || after >= static_cast<int64_t>(events_.size())) return false;
  *out = events_[static_cast<size_t>(after)];
  return true;
}

int64_t EventLog::last_sequence() const {
  MutexLock lock(&mutex_);
  return static_cast<int64_t>(events_.size());
}

void EventLog::Restore(std::vector<v1::JobEvent> events, bool closed) {
  MutexLock lock(&mutex_);
  events_ = std::move(events);
  closed_ = closed;
}

bool EventLog::closed() const {
  MutexLock lock(&mutex_);
  return closed_;
}

void EventLog::EndStreams() {
  {
    MutexLock lock(&mutex_);
    streams_ended_ = true;
  }
  Notify();
}

bool EventLog::streams_ended() const {
  MutexLock lock(&mutex_);
  return streams_ended_;
}

void EventLog::Subscribe(std::shared_ptr<Listener> listener) {
  MutexLock lock(&mutex_);
  listeners_.push_back(std::move(listener));
}

void EventLog::Unsubscribe(const Listener* listener) {
  MutexLock lock(&mutex_);
  listeners_.erase(std::remove_if(listeners_.begin(), listeners_.end(),
                                  [listener](const auto& l) { return l.get() == listener; }),
                   listeners_.end());
}

}  // namespace accumulus::server
