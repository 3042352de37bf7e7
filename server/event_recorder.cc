#include "server/event_recorder.h"

#include <memory>
#include <set>

#include "common/clock.h"
#include "server/job_state.h"

namespace accumulus::server {

void EventRecorder::Append(JobRecord* record, v1::JobEvent event, bool closes) {
  // Numbered now, in order; recorded durably, then shown to watchers, by the
  // writer: a watcher never sees an event a restart would lose.
  event.set_job_id(record->job.id());
  event.set_sequence(++record->last_sequence);
  if (!event.has_time()) *event.mutable_time() = Now();
  closes = closes || IsTerminal(record->job.state());
  events_.push_back({record, std::move(event), closes});
  SubmitUnlessBatching();
}

void EventRecorder::Delete(const std::string& job_id) {
  deletions_.push_back(job_id);
  SubmitUnlessBatching();
}

void EventRecorder::WhenDurable(Durable done) {
  after_durable_.push_back(std::move(done));
  SubmitUnlessBatching();
}

void EventRecorder::Submit() {
  if (events_.empty() && deletions_.empty() && after_durable_.empty()) return;
  // One change per run of one job's events: its snapshot as of now (the
  // record may be gone by the time the writer runs), and where the events
  // go once durable.
  struct Shown {
    std::shared_ptr<EventLog> log;
    std::vector<bool> closes;
  };
  std::vector<StoreWriter::Change> changes;
  std::vector<Shown> shown;
  for (size_t i = 0; i < events_.size();) {
    JobRecord* record = events_[i].record;
    StoreWriter::Change change{record->job, {}};
    Shown where{record->log, {}};
    for (; i < events_.size() && events_[i].record == record; ++i) {
      change.events.push_back(std::move(events_[i].event));
      where.closes.push_back(events_[i].closes);
    }
    changes.push_back(std::move(change));
    shown.push_back(std::move(where));
  }
  events_.clear();
  writer_->Submit(
      std::move(changes), std::move(deletions_),
      [shown = std::move(shown), done = std::move(after_durable_), events_total = events_total_](
          const Status& outcome, std::vector<StoreWriter::Change>* durable) {
        // Not durable: never shown (a restart would lose them).
        std::set<EventLog*> grown;
        for (size_t i = 0; outcome.ok() && i < durable->size(); ++i) {
          std::vector<v1::JobEvent>& events = (*durable)[i].events;
          for (size_t j = 0; j < events.size(); ++j) {
            shown[i].log->Append(std::move(events[j]), shown[i].closes[j]);
            events_total->Increment();
          }
          grown.insert(shown[i].log.get());
        }
        for (EventLog* log : grown) log->Notify();
        for (const auto& d : done) d(outcome);
      });
  deletions_.clear();
  after_durable_.clear();
}

}  // namespace accumulus::server
