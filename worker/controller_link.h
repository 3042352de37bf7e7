// The worker's end of the worker link: dials the controller, registers, and
// keeps the stream up (so a worker may start before the controller).
//
// An acknowledged link: every event batch and status gets a sequence number
// (WorkerMessage.sequence, from 1 within this daemon's link_epoch), and is
// kept until the controller acknowledges it, cumulatively, as recorded
// (LinkAck; Registered.acked_sequence after a reconnect). What is not
// acknowledged when a session ends is written again, in order, on the next
// one; the controller knows a resent event by its trainer's number
// (JobEvent.rank_sequence). The kept messages are bounded (max_buffered):
// beyond it the oldest event batch goes, counted per job and reported in
// the next registration; statuses stay.
//
// Reconnecting: the session waits for the channel to be ready
// (wait_for_ready), and the channel redials with gRPC's own backoff, from
// initial_backoff up to max_backoff (±20% jitter). That is the only backoff
// while the controller is unreachable, so a worker registers within
// max_backoff × 1.2 plus one handshake of the controller listening again.
// (A second backoff of our own on top of the channel's used to stack the two:
// 11–13 s with both at 5 s.)
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "accumulus/v1/worker.grpc.pb.h"
#include "common/mutex.h"
#include "worker/worker_metrics.h"

namespace accumulus::worker {

struct LinkOptions {
  std::string controller_address;
  // TLS with the worker's client certificate (common/tls.h), or plaintext
  // when the worker runs --insecure. Required.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // The name the controller's certificate is checked against, when not the
  // host of controller_address.
  std::string tls_server_name;
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{2000};
  // Messages kept until acknowledged (written or not); beyond this the
  // oldest event batch is dropped (and the drop is logged and reported).
  size_t max_buffered = 100000;
  // The worker's lease: how long after the newest heartbeat the controller
  // echoed it may keep training without hearing from it again. 0: half the
  // controller's lost-worker timeout (Registered.lost_after_ms); a larger
  // value than two thirds of it is refused for half of it, with an error,
  // since the trainers' lease (half of this) must run out before the
  // controller places the next attempt.
  std::chrono::milliseconds lease{0};
  // Where the link counts what it buffers, drops and (re)connects (null:
  // nowhere). Must outlive the link.
  const WorkerMetrics* metrics = nullptr;
};

class ControllerLink {
 public:
  // `registration` is re-sent on every connect, with running_job_ids filled
  // from `running_jobs()`. `on_message` receives assignments and cancels on
  // the link's reader thread; it must not block for long.
  ControllerLink(LinkOptions options, v1::Register registration,
                 std::function<std::vector<std::string>()> running_jobs,
                 std::function<void(const v1::ControllerMessage&)> on_message);
  ~ControllerLink();  // Stop()s.

  void Start();
  void Stop() EXCLUDES(mutex_);
  // Queues a message for the controller, numbering it.
  void Send(v1::WorkerMessage message) EXCLUDES(mutex_);

  // Messages kept, not yet acknowledged.
  size_t unacknowledged() const EXCLUDES(mutex_);
  // Whether a session is registered with the controller now.
  bool connected() const EXCLUDES(mutex_);
  // Waits until every message sent so far is acknowledged (a stopping
  // worker's last statuses reach the store); false at the deadline.
  bool WaitAcknowledged(std::chrono::steady_clock::time_point deadline) EXCLUDES(mutex_);

  // Whether the lease holds now: the controller echoed a heartbeat sent
  // less than a lease ago (or the registration was answered that recently).
  bool LeaseHeld() const EXCLUDES(mutex_);
  // The lease in force (0 before the first registration), and the one the
  // worker gives its trainers: half of it.
  std::chrono::milliseconds lease() const EXCLUDES(mutex_);
  std::chrono::milliseconds trainer_lease() const { return lease() / 2; }

 private:
  // One connection attempt through its end; true if it registered.
  bool RunSession();
  void WriteLoop(grpc::ClientReaderWriter<v1::WorkerMessage, v1::ControllerMessage>* stream,
                 int heartbeat_ms) EXCLUDES(mutex_);
  // The next message to write (a heartbeat when one is due), waiting for
  // one; false once the session or the link ends.
  bool NextMessageLocked(std::chrono::milliseconds heartbeat_interval,
                         std::chrono::steady_clock::time_point* next_heartbeat,
                         v1::WorkerMessage* message) REQUIRES(mutex_);
  void Run();
  // Says how many messages are kept (metrics).
  void CountBufferedLocked() REQUIRES(mutex_);

  const LinkOptions options_;
  const v1::Register registration_;
  const std::function<std::vector<std::string>()> running_jobs_;
  const std::function<void(const v1::ControllerMessage&)> on_message_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerLink::Stub> stub_;
  std::thread thread_;

  // The lease for `lost_after_ms`, from options_.lease (see LinkOptions).
  std::chrono::milliseconds ResolveLease(int lost_after_ms) const;  // no lock needed
  // An echo of a heartbeat sent at `sent_at_us` arrived: the lease runs
  // until then plus lease_.
  void Renew(int64_t sent_at_us) EXCLUDES(mutex_);
  // Everything up to `sequence` is recorded: forgotten here.
  void Acknowledge(uint64_t sequence) EXCLUDES(mutex_);

  mutable Mutex mutex_;
  CondVar changed_;
  // This run of the daemon, for the controller: sequences count within it.
  const uint64_t epoch_;
  uint64_t next_sequence_ GUARDED_BY(mutex_) = 1;
  // Every numbered message not yet acknowledged, in sequence order; the
  // first `written_` went out in the current session.
  std::deque<v1::WorkerMessage> unacked_ GUARDED_BY(mutex_);
  size_t written_ GUARDED_BY(mutex_) = 0;
  bool stopping_ GUARDED_BY(mutex_) = false;
  bool session_live_ GUARDED_BY(mutex_) = false;
  bool registered_before_ GUARDED_BY(mutex_) = false;
  grpc::ClientContext* context_ GUARDED_BY(mutex_) = nullptr;  // of the live session, for Stop
  uint64_t dropped_ GUARDED_BY(mutex_) = 0;
  // Dropped since the last registration, by job: told to the controller.
  std::map<std::string, int64_t> dropped_by_job_ GUARDED_BY(mutex_);
  std::chrono::milliseconds lease_ GUARDED_BY(mutex_) = std::chrono::milliseconds(0);
  std::chrono::steady_clock::time_point lease_until_ GUARDED_BY(mutex_);
};

}  // namespace accumulus::worker
