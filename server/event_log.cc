#include "server/event_log.h"

#include <algorithm>

#include "common/clock.h"
#include "common/mutex.h"

namespace accumulus::server {

EventLog::EventLog(std::string job_id, Options options)
    : job_id_(std::move(job_id)), options_(std::move(options)) {}

const v1::JobEvent& EventLog::Append(v1::JobEvent event, bool closes) {
  MutexLock lock(&mutex_);
  event.set_job_id(job_id_);
  event.set_sequence(++last_);
  if (!event.has_time()) {
    *event.mutable_time() = Now();
  }
  recent_.push_back(std::move(event));
  // The latest event decides: a resumed job's log opens again.
  closed_ = closes;
  TrimLocked();
  return recent_.back();
}

void EventLog::TrimLocked() {
  if (!options_.older) return;
  // The newest stays: Append returns it.
  const size_t keep = std::max<size_t>(options_.keep, 1);
  while (recent_.size() > keep) recent_.pop_front();
}

void EventLog::Notify() {
  std::vector<std::shared_ptr<Listener>> listeners;
  {
    MutexLock lock(&mutex_);
    listeners = listeners_;
  }
  for (const auto& l : listeners) l->OnEventsAvailable();
}

Status EventLog::ReadAfter(int64_t after, int max, std::deque<v1::JobEvent>* out) const {
  int64_t first_in_memory = 0;
  {
    MutexLock lock(&mutex_);
    first_in_memory = last_ - static_cast<int64_t>(recent_.size()) + 1;
    if (after < 0 || after >= last_ || max <= 0) return Status::Ok();
    if (after + 1 >= first_in_memory) {
      const auto from = recent_.begin() + (after + 1 - first_in_memory);
      const auto to = from + std::min<int64_t>(max, recent_.end() - from);
      out->insert(out->end(), from, to);
      return Status::Ok();
    }
  }
  // Older than memory holds: from the database, without the lock, so that
  // appends (the writer thread) never wait for a replay's read.
  const int wanted = static_cast<int>(std::min<int64_t>(max, first_in_memory - 1 - after));
  StatusOr<std::vector<v1::JobEvent>> older = options_.older(after, wanted);
  if (!older.ok()) return older.status();
  // Recorded, yet not in the database: the job was deleted since (pruned).
  if (older->empty()) {
    return Status::NotFound("the events of job " + job_id_ + " after " + std::to_string(after) +
                            " are no longer stored (the job was deleted)");
  }
  for (v1::JobEvent& event : *older) out->push_back(std::move(event));
  return Status::Ok();
}

int64_t EventLog::last_sequence() const {
  MutexLock lock(&mutex_);
  return last_;
}

size_t EventLog::events_in_memory() const {
  MutexLock lock(&mutex_);
  return recent_.size();
}

void EventLog::Restore(std::vector<v1::JobEvent> newest, int64_t last_sequence, bool closed) {
  MutexLock lock(&mutex_);
  recent_.assign(std::make_move_iterator(newest.begin()), std::make_move_iterator(newest.end()));
  last_ = last_sequence;
  closed_ = closed;
  TrimLocked();
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
