#include "server/worker_link_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/tls.h"

namespace accumulus::server {
namespace {

// A link refused before its first message: it ends with `status`.
class RefusedLink final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage> {
 public:
  explicit RefusedLink(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

// One worker's stream. Reads are handled in order on gRPC's threads (they
// only update the JobManager, which never blocks); writes are queued and sent
// one at a time.
class LinkReactor final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage> {
 public:
  LinkReactor(WorkerLinkService* service, grpc::CallbackServerContext* context)
      : service_(service),
        jobs_(service->jobs_),
        context_(context),
        handle_(new SendHandle(this)),
        last_heard_(Now().time_since_epoch().count()) {
    {
      MutexLock lock(&service_->mutex_);
      service_->live_.insert(this);
    }
    StartRead(&incoming_);
  }

  // gRPC holds one reference until OnDone; CloseSilentLinks one while it
  // cancels (OnDone may run on another thread meanwhile).
  void Ref() { refs_.fetch_add(1); }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      CloseWith(grpc::Status::OK, "its link ended (closed by the worker, or the connection broke)");
      return;
    }
    last_heard_.store(Now().time_since_epoch().count());
    if (!Dispatch(incoming_)) return;
    StartRead(&incoming_);
  }

  bool SilentFor(std::chrono::milliseconds lost_after) const {
    return Now() - LastHeard() >= lost_after;
  }

  // The controller is stopping: the link closes, the worker reconnects.
  void CloseForShutdown(const std::string& reason) {
    CloseWith(grpc::Status(grpc::StatusCode::UNAVAILABLE, reason), reason);
    Cancel();
  }

  // The worker is lost: the link closes (the pending read ends, then OnDone).
  void CloseSilent() {
    const auto silent_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Now() - LastHeard()).count();
    CloseWith(grpc::Status(grpc::StatusCode::UNAVAILABLE, "no heartbeat"),
              "no message for " + std::to_string(silent_ms) + " ms");
    Cancel();
  }

  void OnWriteDone(bool ok) override {
    bool finish = false;
    const v1::ControllerMessage* next = nullptr;
    grpc::Status status;
    {
      MutexLock lock(&mutex_);
      outbox_.pop_front();
      writing_ = false;
      if (!ok) closing_ = true;
      if (closing_) {
        finish = !finish_called_;
        finish_called_ = true;
        status = close_status_;
      } else if (!outbox_.empty()) {
        writing_ = true;
        next = &outbox_.front();  // deque growth keeps references valid
      }
    }
    if (finish) Finish(status);
    if (next != nullptr) StartWrite(next);
  }

  void OnCancel() override { CloseWith(grpc::Status::CANCELLED, "the link was cancelled"); }

  void OnDone() override {
    {
      // gRPC frees the context once OnDone returns; the Finish that
      // CloseWith called may bring OnDone here before Cancel runs.
      MutexLock lock(&context_mutex_);
      context_ = nullptr;
    }
    handle_->Detach();
    service_->Forget(this, worker_id_);
    if (session_ != 0) {
      // Its ranks may run until their leases lapse, which is before the
      // lost-worker timeout has passed since the last message it sent.
      std::string reason;
      {
        MutexLock lock(&mutex_);
        reason = close_reason_;
      }
      jobs_->WorkerGone(worker_id_, session_, reason,
                        LastHeard() + std::chrono::milliseconds(service_->lost_after_ms_));
    }
    Unref();
  }

 private:
  // How the JobManager reaches this reactor; cut in OnDone.
  class SendHandle {
   public:
    explicit SendHandle(LinkReactor* reactor) : reactor_(reactor) {}
    void Send(const v1::ControllerMessage& message) {
      MutexLock lock(&mutex_);
      if (reactor_ != nullptr) reactor_->Send(message);
    }
    void Detach() {
      MutexLock lock(&mutex_);
      reactor_ = nullptr;
    }

   private:
    Mutex mutex_;
    LinkReactor* reactor_ GUARDED_BY(mutex_);
  };

  // In awake time (AwakeClock): a controller that did not run heard nothing,
  // and that silence is not the worker's.
  AwakeClock::time_point Now() const { return service_->clock_->Now(); }
  AwakeClock::time_point LastHeard() const {
    return AwakeClock::time_point(AwakeClock::duration(last_heard_.load()));
  }

  // Returns false when the link was closed because of the message.
  bool Dispatch(const v1::WorkerMessage& message) {
    if (message.has_register_()) {
      if (session_ != 0) {
        CloseWith(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "registered twice"),
                  "protocol error: registered twice");
        return false;
      }
      worker_id_ = message.register_().worker_id();
      if (worker_id_.empty()) {
        CloseWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "register.worker_id is empty"),
                  "protocol error: no worker id");
        return false;
      }
      epoch_ = message.register_().link_epoch();
      std::string peer;
      {
        MutexLock lock(&context_mutex_);
        if (context_ != nullptr) peer = context_->peer();
      }
      if (Status s = service_->ClaimWorkerId(worker_id_, epoch_, peer, this); !s.ok()) {
        spdlog::warn("refused a worker link from {}: {}", peer, s.message());
        CloseWith(ToGrpcStatus(s), s.message());
        return false;
      }
      v1::ControllerMessage ack;
      ack.mutable_registered()->set_worker_id(worker_id_);
      ack.mutable_registered()->set_heartbeat_interval_ms(service_->heartbeat_interval_ms_);
      ack.mutable_registered()->set_lost_after_ms(service_->lost_after_ms_);
      ack.mutable_registered()->set_acked_sequence(
          jobs_->AcknowledgeableUpTo(worker_id_, service_->DurableUpTo(worker_id_, epoch_)));
      Send(ack);  // before any assignment the registration may trigger
      std::shared_ptr<SendHandle> handle = handle_;
      session_ = jobs_->WorkerConnected(
          message.register_(), [handle](const v1::ControllerMessage& m) { handle->Send(m); });
      return true;
    }
    if (session_ == 0) {
      CloseWith(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "the first message on the link must be register"),
                "protocol error: message before register");
      return false;
    }
    if (message.has_heartbeat()) {
      v1::ControllerMessage echo;
      echo.mutable_heartbeat_ack()->set_sent_at_us(message.heartbeat().sent_at_us());
      echo.mutable_heartbeat_ack()->set_acked_sequence(
          jobs_->AcknowledgeableUpTo(worker_id_, service_->DurableUpTo(worker_id_, epoch_)));
      Send(echo);
      return true;
    }
    const uint64_t sequence = message.sequence();
    const bool new_status = !service_->Processed(worker_id_, epoch_, sequence);
    EventRecorder::Durable acknowledge;
    if (sequence > 0) {
      // On the store's writer thread, once durable; through the handle, since
      // the link may have ended by then. Never what is not durable: the
      // worker keeps it and sends it again to the next controller.
      acknowledge = [service = service_, jobs = jobs_, handle = handle_, worker = worker_id_,
                     epoch = epoch_, sequence](const Status& durable) {
        if (!durable.ok()) return;
        v1::ControllerMessage ack;
        ack.mutable_ack()->set_sequence(
            jobs->AcknowledgeableUpTo(worker, service->MarkDurable(worker, epoch, sequence)));
        handle->Send(ack);
      };
    }
    jobs_->RecordMessage(worker_id_, message, new_status, std::move(acknowledge));
    if (sequence > 0) service_->MarkProcessed(worker_id_, epoch_, sequence);
    return true;
  }

  void Send(const v1::ControllerMessage& message) {
    const v1::ControllerMessage* next = nullptr;
    {
      MutexLock lock(&mutex_);
      if (closing_) return;
      // Acknowledgements are cumulative: one still queued (not the one
      // being written) takes the newer number instead of a second message.
      if (message.has_ack() && outbox_.size() >= 2 && outbox_.back().has_ack()) {
        outbox_.back().mutable_ack()->set_sequence(
            std::max(outbox_.back().ack().sequence(), message.ack().sequence()));
        return;
      }
      outbox_.push_back(message);
      if (writing_) return;
      writing_ = true;
      next = &outbox_.front();  // deque growth keeps references valid
    }
    StartWrite(next);
  }

  // Ends the pending read (and a write stuck on a silent peer), unless the
  // call is already done.
  void Cancel() {
    MutexLock lock(&context_mutex_);
    // gRPC runs the reactions it causes on its executor, never inline, so
    // none of them waits for this lock here.
    if (context_ != nullptr) context_->TryCancel();
  }

  void CloseWith(const grpc::Status& status, const std::string& reason) {
    bool finish = false;
    {
      MutexLock lock(&mutex_);
      if (closing_) return;
      closing_ = true;
      close_status_ = status;
      close_reason_ = reason;
      if (!writing_ && !finish_called_) finish = finish_called_ = true;
    }
    if (finish) Finish(status);
  }

  WorkerLinkService* const service_;
  JobManager* const jobs_;
  Mutex context_mutex_;
  grpc::CallbackServerContext* context_ GUARDED_BY(context_mutex_);  // null once done
  const std::shared_ptr<SendHandle> handle_;
  std::atomic<AwakeClock::rep> last_heard_;  // AwakeClock's time since its epoch
  std::atomic<int> refs_{1};
  v1::WorkerMessage incoming_;  // reads happen one at a time
  std::string worker_id_;       // set by the first read, then constant
  uint64_t epoch_ = 0;          // likewise
  uint64_t session_ = 0;        // likewise

  Mutex mutex_;
  // while writing_).
  std::deque<v1::ControllerMessage> outbox_ GUARDED_BY(mutex_);
  bool writing_ GUARDED_BY(mutex_) = false;
  bool closing_ GUARDED_BY(mutex_) = false;
  bool finish_called_ GUARDED_BY(mutex_) = false;
  grpc::Status close_status_ GUARDED_BY(mutex_);
  std::string close_reason_ GUARDED_BY(mutex_) = "link closed";
};

grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage>* WorkerLinkService::Connect(
    grpc::CallbackServerContext* context) {
  if (require_client_certificate_ && !PeerHasVerifiedCertificate(*context)) {
    spdlog::warn("refused a worker link from {}: it presented no client certificate",
                 context->peer());
    return new RefusedLink(grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        "the worker link needs a client certificate signed by the cluster's worker CA (the "
        "controller's --worker-ca; the worker's --tls-cert and --tls-key)"));
  }
  spdlog::debug("worker link from {} (certificate \"{}\")", context->peer(),
                PeerCertificateName(*context));
  return new LinkReactor(this, context);
}

void WorkerLinkService::CloseSilentLinks() {
  std::vector<LinkReactor*> silent;
  {
    // A reactor leaves live_ (in OnDone) before its last reference goes.
    MutexLock lock(&mutex_);
    for (LinkReactor* reactor : live_) {
      if (!reactor->SilentFor(std::chrono::milliseconds(lost_after_ms_))) continue;
      reactor->Ref();
      silent.push_back(reactor);
    }
  }
  // Outside mutex_: the reactions cancelling causes take it (OnDone: Forget).
  for (LinkReactor* reactor : silent) {
    reactor->CloseSilent();
    reactor->Unref();
  }
}

void WorkerLinkService::CloseAllLinks(const std::string& reason) {
  std::vector<LinkReactor*> open;
  {
    MutexLock lock(&mutex_);
    for (LinkReactor* reactor : live_) {
      reactor->Ref();
      open.push_back(reactor);
    }
  }
  // Outside mutex_, as in CloseSilentLinks.
  for (LinkReactor* reactor : open) {
    reactor->CloseForShutdown(reason);
    reactor->Unref();
  }
}

WorkerLinkService::LinkProgress& WorkerLinkService::ProgressLocked(const std::string& worker_id,
                                                                   uint64_t epoch) {
  LinkProgress& progress = progress_[worker_id];
  if (progress.epoch != epoch) progress = {epoch, 0, 0};
  return progress;
}

uint64_t WorkerLinkService::ProcessedUpTo(const std::string& worker_id, uint64_t epoch) const {
  MutexLock lock(&mutex_);
  auto it = progress_.find(worker_id);
  return it != progress_.end() && it->second.epoch == epoch ? it->second.processed : 0;
}

uint64_t WorkerLinkService::DurableUpTo(const std::string& worker_id, uint64_t epoch) const {
  MutexLock lock(&mutex_);
  auto it = progress_.find(worker_id);
  return it != progress_.end() && it->second.epoch == epoch ? it->second.durable : 0;
}

bool WorkerLinkService::Processed(const std::string& worker_id, uint64_t epoch,
                                  uint64_t sequence) const {
  return sequence > 0 && sequence <= ProcessedUpTo(worker_id, epoch);
}

void WorkerLinkService::MarkProcessed(const std::string& worker_id, uint64_t epoch,
                                      uint64_t sequence) {
  MutexLock lock(&mutex_);
  LinkProgress& progress = ProgressLocked(worker_id, epoch);
  progress.processed = std::max(progress.processed, sequence);
}

uint64_t WorkerLinkService::MarkDurable(const std::string& worker_id, uint64_t epoch,
                                        uint64_t sequence) {
  MutexLock lock(&mutex_);
  LinkProgress& progress = ProgressLocked(worker_id, epoch);
  progress.durable = std::max(progress.durable, sequence);
  return progress.durable;
}

void WorkerLinkService::Forget(LinkReactor* reactor, const std::string& worker_id) {
  MutexLock lock(&mutex_);
  live_.erase(reactor);
  auto holder = holders_.find(worker_id);
  if (holder != holders_.end() && holder->second.reactor == reactor) holders_.erase(holder);
}

Status WorkerLinkService::ClaimWorkerId(const std::string& worker_id, uint64_t epoch,
                                        const std::string& peer, LinkReactor* reactor) {
  MutexLock lock(&mutex_);
  auto [holder, added] = holders_.try_emplace(worker_id, IdHolder{reactor, epoch, peer});
  if (added) return Status::Ok();
  if (holder->second.epoch != epoch &&
      !holder->second.reactor->SilentFor(std::chrono::milliseconds(lost_after_ms_))) {
    return Status::AlreadyExists("worker id \"" + worker_id +
                                 "\" is taken: another worker daemon is connected under it (" +
                                 holder->second.peer + "); give each worker its own --worker-id");
  }
  holder->second = {reactor, epoch, peer};
  return Status::Ok();
}

}  // namespace accumulus::server
