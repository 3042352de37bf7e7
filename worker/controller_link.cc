#include "worker/controller_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/mutex.h"

namespace accumulus::worker {
namespace {

int64_t MonotonicMicros(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

uint64_t RandomEpoch() {
  std::random_device random;
  const uint64_t epoch = (static_cast<uint64_t>(random()) << 32) ^ random();
  return epoch == 0 ? 1 : epoch;
}

}  // namespace

ControllerLink::ControllerLink(LinkOptions options, v1::Register registration,
                               std::function<std::vector<std::string>()> running_jobs,
                               std::function<void(const v1::ControllerMessage&)> on_message)
    : options_(std::move(options)),
      registration_(std::move(registration)),
      running_jobs_(std::move(running_jobs)),
      on_message_(std::move(on_message)),
      epoch_(RandomEpoch()) {
  grpc::ChannelArguments args;
  if (!options_.tls_server_name.empty()) args.SetSslTargetNameOverride(options_.tls_server_name);
  // Notice a dead controller even when no message is due.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(options_.initial_backoff.count()));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options_.max_backoff.count()));
  channel_ = grpc::CreateCustomChannel(options_.controller_address, options_.credentials, args);
  stub_ = v1::WorkerLink::NewStub(channel_);
}

ControllerLink::~ControllerLink() { Stop(); }

void ControllerLink::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ControllerLink::Stop() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  changed_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void ControllerLink::Send(v1::WorkerMessage message) {
  {
    MutexLock lock(&mutex_);
    message.set_sequence(next_sequence_++);
    unacked_.push_back(std::move(message));
    if (unacked_.size() > options_.max_buffered) {
      // The oldest event batch goes first, written or not: a job's status
      // (how it ended) is kept.
      auto victim = std::find_if(unacked_.begin(), unacked_.end(),
                                 [](const v1::WorkerMessage& m) { return m.has_events(); });
      if (victim == unacked_.end()) victim = unacked_.begin();
      const std::string job_id = victim->has_events()   ? victim->events().job_id()
                                 : victim->has_status() ? victim->status().job_id()
                                                        : "";
      if (!job_id.empty()) ++dropped_by_job_[job_id];
      if (static_cast<size_t>(victim - unacked_.begin()) < written_) --written_;
      unacked_.erase(victim);
      if (dropped_++ % 1000 == 0) {
        spdlog::warn(
            "dropped {} buffered message(s) the controller has not acknowledged (it is "
            "unreachable, or cannot record them)",
            dropped_);
      }
      if (options_.metrics) options_.metrics->messages_dropped->Increment();
    }
    CountBufferedLocked();
  }
  changed_.NotifyAll();
}

void ControllerLink::CountBufferedLocked() {
  if (options_.metrics) {
    options_.metrics->messages_buffered->Set(static_cast<double>(unacked_.size()));
  }
}

bool ControllerLink::connected() const {
  MutexLock lock(&mutex_);
  return session_live_;
}

size_t ControllerLink::unacknowledged() const {
  MutexLock lock(&mutex_);
  return unacked_.size();
}

bool ControllerLink::WaitAcknowledged(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mutex_);
  while (!unacked_.empty()) {
    if (!changed_.WaitUntil(&mutex_, deadline)) return unacked_.empty();
  }
  return true;
}

void ControllerLink::Acknowledge(uint64_t sequence) {
  {
    MutexLock lock(&mutex_);
    while (!unacked_.empty() && unacked_.front().sequence() <= sequence) {
      unacked_.pop_front();
      if (written_ > 0) --written_;
    }
    CountBufferedLocked();
  }
  changed_.NotifyAll();
}

bool ControllerLink::LeaseHeld() const {
  MutexLock lock(&mutex_);
  return std::chrono::steady_clock::now() < lease_until_;
}

std::chrono::milliseconds ControllerLink::lease() const {
  MutexLock lock(&mutex_);
  return lease_;
}

std::chrono::milliseconds ControllerLink::ResolveLease(int lost_after_ms) const {
  const std::chrono::milliseconds lost_after(std::max(lost_after_ms, 3));
  if (options_.lease.count() <= 0) return lost_after / 2;
  if (options_.lease * 3 >= lost_after * 2) {
    spdlog::error(
        "--lease-ms {} is too long for the controller's lost-worker timeout of {} ms (with the "
        "trainers' half on top it must end before it); using {} ms",
        options_.lease.count(), lost_after.count(), (lost_after / 2).count());
    return lost_after / 2;
  }
  return options_.lease;
}

void ControllerLink::Renew(int64_t sent_at_us) {
  MutexLock lock(&mutex_);
  const auto until =
      std::chrono::steady_clock::time_point(std::chrono::microseconds(sent_at_us)) + lease_;
  lease_until_ = std::max(lease_until_, until);
}

void ControllerLink::Run() {
  // Only a session that reached the controller and was refused or broke at
  // once backs off here; an unreachable one waits inside the channel.
  auto backoff = options_.initial_backoff;
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    const bool registered = RunSession();
    MutexLock lock(&mutex_);
    if (stopping_) return;
    if (registered && std::chrono::steady_clock::now() - started > options_.max_backoff) {
      backoff = options_.initial_backoff;  // it lasted: the next break is news
      continue;
    }
    spdlog::info("controller {}: session ended at once; retrying in {} ms",
                 options_.controller_address, backoff.count());
    // A timed wait is the backoff itself; Stop() cuts it short.
    const auto deadline = std::chrono::steady_clock::now() + backoff;
    while (!stopping_ && changed_.WaitUntil(&mutex_, deadline)) {
    }
    if (stopping_) return;
    backoff = std::min(options_.max_backoff, backoff * 2);
  }
}

bool ControllerLink::RunSession() {
  grpc::ClientContext context;
  {
    MutexLock lock(&mutex_);
    if (stopping_) return false;
    context_ = &context;
  }
  // Waits for the channel (and its reconnect backoff) rather than failing
  // fast while the controller is down; Stop() cancels the wait.
  context.set_wait_for_ready(true);
  auto stream = stub_->Connect(&context);
  v1::WorkerMessage hello;
  *hello.mutable_register_() = registration_;
  hello.mutable_register_()->set_link_epoch(epoch_);
  std::set<std::string> running;
  for (const std::string& id : running_jobs_()) running.insert(id);
  {
    MutexLock lock(&mutex_);
    // Whatever the last session wrote and was not acknowledged goes again.
    written_ = 0;
    // A job whose end the controller has not heard of yet still counts as
    // running here: the buffered status tells how it ended.
    for (const v1::WorkerMessage& m : unacked_) {
      if (m.has_status()) running.insert(m.status().job_id());
    }
    for (const auto& [job_id, count] : dropped_by_job_) {
      v1::DroppedMessages* dropped = hello.mutable_register_()->add_dropped();
      dropped->set_job_id(job_id);
      dropped->set_count(count);
    }
  }
  for (const std::string& id : running) hello.mutable_register_()->add_running_job_ids(id);

  bool registered = false;
  v1::ControllerMessage reply;
  // The registration's answer renews the lease as a heartbeat's echo would;
  // timed from before the write, like a heartbeat.
  const auto hello_sent = std::chrono::steady_clock::now();
  if (stream->Write(hello) && stream->Read(&reply) && reply.has_registered()) {
    registered = true;
    {
      MutexLock lock(&mutex_);
      lease_ = ResolveLease(reply.registered().lost_after_ms());
    }
    Renew(MonotonicMicros(hello_sent));
    Acknowledge(reply.registered().acked_sequence());
    spdlog::info(
        "registered with controller {} as {}: lost after {} ms unheard; lease {} ms, trainers' "
        "{} ms",
        options_.controller_address, reply.registered().worker_id(),
        reply.registered().lost_after_ms(), lease().count(), trainer_lease().count());
    {
      MutexLock lock(&mutex_);
      session_live_ = true;
      if (options_.metrics) {
        options_.metrics->controller_connected->Set(1);
        if (registered_before_) options_.metrics->controller_reconnects->Increment();
      }
      registered_before_ = true;
      // Told; counts of drops after this point go in the next registration.
      for (const auto& d : hello.register_().dropped()) {
        if ((dropped_by_job_[d.job_id()] -= d.count()) <= 0) dropped_by_job_.erase(d.job_id());
      }
    }
    // Heartbeats several times per lease, so that one late echo does not
    // let it lapse.
    const int heartbeat_ms = std::min<int>(reply.registered().heartbeat_interval_ms(),
                                           static_cast<int>(lease().count() / 3));
    std::thread writer([&] { WriteLoop(stream.get(), heartbeat_ms); });
    while (stream->Read(&reply)) {
      if (reply.has_heartbeat_ack()) {
        Renew(reply.heartbeat_ack().sent_at_us());
        Acknowledge(reply.heartbeat_ack().acked_sequence());
      } else if (reply.has_ack()) {
        Acknowledge(reply.ack().sequence());
      } else {
        on_message_(reply);
      }
    }
    {
      MutexLock lock(&mutex_);
      session_live_ = false;
      if (options_.metrics) options_.metrics->controller_connected->Set(0);
    }
    changed_.NotifyAll();
    context.TryCancel();
    writer.join();
  }
  {
    MutexLock lock(&mutex_);
    context_ = nullptr;
  }
  const grpc::Status status = stream->Finish();
  if (registered) {
    spdlog::warn("link to controller ended: {}", status.error_message());
  } else if (!status.ok()) {
    // Refused (a certificate, an id taken) or cut before the answer: what
    // the operator must read to fix it.
    spdlog::error("controller {} did not register this worker: {}", options_.controller_address,
                  status.error_message());
  }
  return registered;
}

namespace {
constexpr int kMaxEventsPerMessage = 256;
}  // namespace

bool ControllerLink::NextMessageLocked(std::chrono::milliseconds heartbeat_interval,
                                       std::chrono::steady_clock::time_point* next_heartbeat,
                                       v1::WorkerMessage* message) {
  while (session_live_ && !stopping_) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= *next_heartbeat) {
      // Due whatever else is queued: the lease depends on its echo.
      message->mutable_heartbeat()->set_sent_at_us(MonotonicMicros(now));
      *next_heartbeat = now + heartbeat_interval;
      return true;
    }
    if (written_ == unacked_.size()) {
      // Idle: wake for a message, for the end, or for the next heartbeat.
      changed_.WaitUntil(&mutex_, *next_heartbeat);
      continue;
    }
    // A copy: the original stays until it is acknowledged.
    *message = unacked_[written_++];
    // Events of one job queued behind each other travel as one message
    // (the controller records them in one transaction), numbered as the
    // last of them.
    while (message->has_events() && written_ < unacked_.size() && unacked_[written_].has_events() &&
           unacked_[written_].events().job_id() == message->events().job_id() &&
           unacked_[written_].events().attempt() == message->events().attempt() &&
           message->events().events_size() < kMaxEventsPerMessage) {
      const v1::WorkerMessage& next = unacked_[written_++];
      for (const auto& e : next.events().events()) *message->mutable_events()->add_events() = e;
      message->set_sequence(next.sequence());
    }
    return true;
  }
  return false;
}

void ControllerLink::WriteLoop(
    grpc::ClientReaderWriter<v1::WorkerMessage, v1::ControllerMessage>* stream, int heartbeat_ms) {
  const auto interval = std::chrono::milliseconds(std::max(20, heartbeat_ms));
  auto next_heartbeat = std::chrono::steady_clock::now();
  while (true) {
    v1::WorkerMessage message;
    {
      MutexLock lock(&mutex_);
      if (!NextMessageLocked(interval, &next_heartbeat, &message)) return;
    }
    // Blocks: without the lock. A failed write ends the session; what it
    // carried is still unacknowledged and goes again on the next.
    if (!stream->Write(message)) return;
  }
}

}  // namespace accumulus::worker
