#include "server/watch_reactor.h"

#include "common/grpc_status.h"
#include "common/mutex.h"

namespace accumulus::server {

WatchReactor::WatchReactor(std::shared_ptr<EventLog> log, int64_t after_sequence,
                           ControllerMetrics* metrics, std::unique_ptr<WatchQuota::Ticket> place)
    : log_(std::move(log)),
      metrics_(metrics),
      place_(std::move(place)),
      link_(std::make_shared<Link>(this)),
      sent_through_(after_sequence) {
  metrics_->watchers->Increment();
  log_->Subscribe(link_);
  Pump();
}

void WatchReactor::Link::OnEventsAvailable() {
  MutexLock lock(&mutex_);
  if (reactor_ != nullptr) reactor_->Pump();
}

void WatchReactor::Link::Detach() {
  MutexLock lock(&mutex_);
  reactor_ = nullptr;
}

WatchReactor::Refilled WatchReactor::Refill(Status* failed) {
  int64_t after = 0;
  {
    MutexLock lock(&mutex_);
    if (reading_) {  // the Pump that reads looks again once its read is done
      pump_again_ = true;
      return Refilled::kNothingToDo;
    }
    if (writing_ || cancelled_ || finish_called_) return Refilled::kNothingToDo;
    if (!ahead_.empty()) return Refilled::kReady;
    reading_ = true;
    pump_again_ = false;
    after = sent_through_;
  }
  // A batch at a time: events older than the log keeps in memory come from
  // the database, one read per batch. Without this reactor's lock: the store
  // writer's notification takes it, and must never wait for a read.
  std::deque<v1::JobEvent> read;
  const Status status = log_->ReadAfter(after, kReadBatch, &read);
  MutexLock lock(&mutex_);
  reading_ = false;
  if (!status.ok()) *failed = status;
  ahead_ = std::move(read);
  // A notification during the read may have come after it looked.
  return ahead_.empty() && status.ok() && pump_again_ ? Refilled::kReadAgain : Refilled::kReady;
}

void WatchReactor::Pump() {
  for (;;) {
    Status failed;
    Refilled refilled;
    while ((refilled = Refill(&failed)) == Refilled::kReadAgain) {
    }
    if (refilled == Refilled::kNothingToDo) return;
    enum { kNothing, kWrite, kFinish, kEndStream, kFail } action = kNothing;
    grpc::WriteOptions options;
    {
      MutexLock lock(&mutex_);
      if (reading_ || writing_ || cancelled_ || finish_called_) return;
      if (!failed.ok()) {
        finish_called_ = true;
        action = kFail;
      } else if (!ahead_.empty()) {
        message_ = std::move(ahead_.front());
        ahead_.pop_front();
        writing_ = true;
        sent_through_ = message_.sequence();
        action = kWrite;
        // A watcher behind the log (a replay, a burst) gets its events in
        // fewer frames and syscalls: gRPC may hold this one until the next
        // write, which is certain since the next event is already there. The
        // newest event always goes out at once. Never the first write: it
        // carries the initial metadata, and a hinted batch with it never
        // completes (grpc/grpc#12975, #34231).
        if (wrote_any_ && (!ahead_.empty() || log_->last_sequence() > sent_through_)) {
          options.set_buffer_hint();
        }
        wrote_any_ = true;
      } else if (log_->last_sequence() > sent_through_) {
        continue;  // appended since the read: read them before any end
      } else if (log_->closed()) {
        finish_called_ = true;
        action = kFinish;
      } else if (log_->streams_ended()) {
        finish_called_ = true;
        action = kEndStream;
      }
    }
    // Outside the lock: gRPC may run a reaction on this thread.
    if (action == kWrite) StartWrite(&message_, options);
    if (action == kFinish) Finish(grpc::Status::OK);
    // UNAVAILABLE: a client retries that (the CLI's watch goes on after its
    // last event once a controller answers again).
    if (action == kEndStream) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the controller is shutting down"));
    }
    if (action == kFail) Finish(ToGrpcStatus(failed));
    return;
  }
}

void WatchReactor::OnWriteDone(bool ok) {
  bool finish = false;
  {
    MutexLock lock(&mutex_);
    writing_ = false;
    if (!ok) cancelled_ = true;
    if (cancelled_ && !finish_called_) finish_called_ = finish = true;
  }
  if (finish) {
    Finish(grpc::Status::CANCELLED);
  } else {
    Pump();
  }
}

void WatchReactor::OnCancel() {
  bool finish = false;
  {
    MutexLock lock(&mutex_);
    cancelled_ = true;
    // With a write in flight, its OnWriteDone finishes instead.
    if (!writing_ && !finish_called_) finish_called_ = finish = true;
  }
  if (finish) Finish(grpc::Status::CANCELLED);
}

void WatchReactor::OnDone() {
  link_->Detach();
  log_->Unsubscribe(link_.get());
  metrics_->watchers->Decrement();
  delete this;
}

}  // namespace accumulus::server
