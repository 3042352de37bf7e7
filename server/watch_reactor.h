// One WatchJob stream: replays a job's recorded events after the requested
// sequence number, then follows new ones, and finishes after the job's final
// event. It reads the job's EventLog at its own pace (one write in flight),
// so a slow watcher delays nobody.
#pragma once

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <mutex>

#include "accumulus/v1/job.pb.h"
#include "common/mutex.h"
#include "server/controller_metrics.h"
#include "server/event_log.h"
#include "server/watch_quota.h"

namespace accumulus::server {

class WatchReactor final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  // Starts streaming; the reactor deletes itself when the RPC is done.
  // `place` (may be null): the stream's place in the WatchQuota, given back
  // when it is done.
  WatchReactor(std::shared_ptr<EventLog> log, int64_t after_sequence, ControllerMetrics* metrics,
               std::unique_ptr<WatchQuota::Ticket> place = nullptr);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // The log's handle on this reactor; cut when the reactor is done so a late
  // notification cannot reach a deleted reactor.
  class Link final : public EventLog::Listener {
   public:
    explicit Link(WatchReactor* reactor) : reactor_(reactor) {}
    void OnEventsAvailable() override;
    void Detach();

   private:
    Mutex mutex_;
    WatchReactor* reactor_ GUARDED_BY(mutex_);
  };

  // Starts the next write, or finishes once the log is closed and drained.
  void Pump();
  // Reads the next batch into ahead_ if it is empty, outside the lock.
  enum class Refilled {
    kReady,        // ahead_ holds what there is (perhaps nothing), or *failed says why not
    kNothingToDo,  // another Pump reads, a write is in flight, or the stream is over
    kReadAgain,    // a notification came during a read that found nothing
  };
  Refilled Refill(Status* failed);

  // Events read from the log at once, at most.
  static constexpr int kReadBatch = 256;

  const std::shared_ptr<EventLog> log_;
  ControllerMetrics* const metrics_;
  const std::unique_ptr<WatchQuota::Ticket> place_;
  std::shared_ptr<Link> link_;

  Mutex mutex_;
  int64_t sent_through_ GUARDED_BY(mutex_);  // sequence number of the last event written
  bool writing_ GUARDED_BY(mutex_) = false;
  bool reading_ GUARDED_BY(mutex_) = false;     // a Pump reads the log (unlocked)
  bool pump_again_ GUARDED_BY(mutex_) = false;  // a Pump came during that read
  bool wrote_any_ GUARDED_BY(mutex_) = false;
  bool cancelled_ GUARDED_BY(mutex_) = false;
  bool finish_called_ GUARDED_BY(mutex_) = false;  // gRPC needs exactly one Finish
  v1::JobEvent message_ GUARDED_BY(mutex_);  // owned by gRPC between StartWrite and OnWriteDone
  std::deque<v1::JobEvent> ahead_ GUARDED_BY(mutex_);  // read from the log, not yet written
};

}  // namespace accumulus::server
