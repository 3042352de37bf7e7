#include "server/worker_link_service.h"

#include <spdlog/spdlog.h>

#include <deque>
#include <memory>
#include <mutex>

namespace accumulus::server {
namespace {

// One worker's stream. Reads are handled in order on gRPC's threads (they
// only update the JobManager, which never blocks); writes are queued and sent
// one at a time.
class LinkReactor final : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage> {
 public:
  LinkReactor(JobManager* jobs, int heartbeat_interval_ms)
      : jobs_(jobs), heartbeat_interval_ms_(heartbeat_interval_ms), handle_(new SendHandle(this)) {
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      CloseWith(grpc::Status::OK, "the worker closed its link");
      return;
    }
    if (!Dispatch(incoming_)) return;
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    bool finish = false;
    const v1::ControllerMessage* next = nullptr;
    grpc::Status status;
    {
      std::lock_guard<std::mutex> lock(mutex_);
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
    handle_->Detach();
    if (session_ != 0) jobs_->WorkerGone(worker_id_, session_, close_reason_);
    delete this;
  }

 private:
  // How the JobManager reaches this reactor; cut in OnDone.
  class SendHandle {
   public:
    explicit SendHandle(LinkReactor* reactor) : reactor_(reactor) {}
    void Send(const v1::ControllerMessage& message) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (reactor_ != nullptr) reactor_->Send(message);
    }
    void Detach() {
      std::lock_guard<std::mutex> lock(mutex_);
      reactor_ = nullptr;
    }

   private:
    std::mutex mutex_;
    LinkReactor* reactor_;  // GUARDED_BY(mutex_)
  };

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
      v1::ControllerMessage ack;
      ack.mutable_registered()->set_worker_id(worker_id_);
      ack.mutable_registered()->set_heartbeat_interval_ms(heartbeat_interval_ms_);
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
    if (message.has_events()) jobs_->RecordEvents(worker_id_, message.events());
    if (message.has_status()) jobs_->RecordStatus(worker_id_, message.status());
    return true;
  }

  void Send(const v1::ControllerMessage& message) {
    const v1::ControllerMessage* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) return;
      outbox_.push_back(message);
      if (writing_) return;
      writing_ = true;
      next = &outbox_.front();  // deque growth keeps references valid
    }
    StartWrite(next);
  }

  void CloseWith(const grpc::Status& status, const std::string& reason) {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) return;
      closing_ = true;
      close_status_ = status;
      close_reason_ = reason;
      if (!writing_ && !finish_called_) finish = finish_called_ = true;
    }
    if (finish) Finish(status);
  }

  JobManager* const jobs_;
  const int heartbeat_interval_ms_;
  const std::shared_ptr<SendHandle> handle_;
  v1::WorkerMessage incoming_;  // reads happen one at a time
  std::string worker_id_;       // set by the first read, then constant
  uint64_t session_ = 0;        // likewise

  std::mutex mutex_;
  // State below is protected by mutex_ (the front of outbox_ belongs to gRPC
  // while writing_).
  std::deque<v1::ControllerMessage> outbox_;
  bool writing_ = false;
  bool closing_ = false;
  bool finish_called_ = false;
  grpc::Status close_status_;
  std::string close_reason_ = "link closed";
};

}  // namespace

grpc::ServerBidiReactor<v1::WorkerMessage, v1::ControllerMessage>* WorkerLinkService::Connect(
    grpc::CallbackServerContext*) {
  return new LinkReactor(jobs_, heartbeat_interval_ms_);
}

}  // namespace accumulus::server
