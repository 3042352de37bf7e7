// The worker's end of the acknowledged link against a scripted controller on
// loopback (real gRPC): what it numbers, what it resends after a reconnect
// (exactly what was not acknowledged), what an acknowledgement frees, and
// what it drops when the controller stays away too long.
#include "worker/controller_link.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "tests/support/free_port.h"

namespace accumulus::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// What the scripted controller does after reading a message.
struct Reply {
  uint64_t ack = 0;    // a LinkAck up to this (0: none)
  bool close = false;  // then end the stream (the link breaks)
};

// A WorkerLink service that records every message it reads, by session,
// and answers as `script` says.
class ScriptedController final : public v1::WorkerLink::Service {
 public:
  struct Received {
    int session;
    v1::WorkerMessage message;
  };

  std::function<Reply(int session, const v1::WorkerMessage&)> script = [](int, const auto&) {
    return Reply{};
  };
  std::atomic<uint64_t> acked_on_register{0};

  grpc::Status Connect(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::ControllerMessage, v1::WorkerMessage>* stream) override {
    v1::WorkerMessage message;
    if (!stream->Read(&message) || !message.has_register_()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "register first");
    }
    int session = 0;
    {
      MutexLock lock(&mutex_);
      registrations_.push_back(message.register_());
      session = static_cast<int>(registrations_.size());
    }
    changed_.NotifyAll();
    v1::ControllerMessage registered;
    registered.mutable_registered()->set_worker_id(message.register_().worker_id());
    registered.mutable_registered()->set_heartbeat_interval_ms(60000);
    registered.mutable_registered()->set_lost_after_ms(60000);
    registered.mutable_registered()->set_acked_sequence(acked_on_register.load());
    stream->Write(registered);
    while (stream->Read(&message)) {
      if (message.has_heartbeat()) continue;
      const Reply reply = script(session, message);
      {
        MutexLock lock(&mutex_);
        received_.push_back({session, message});
      }
      changed_.NotifyAll();
      if (reply.ack > 0) {
        v1::ControllerMessage ack;
        ack.mutable_ack()->set_sequence(reply.ack);
        stream->Write(ack);
      }
      if (reply.close) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "scripted break");
    }
    return grpc::Status::OK;
  }

  // Waits (bounded) until `done` holds over what was received.
  bool WaitFor(const std::function<bool(const std::vector<Received>&,
                                        const std::vector<v1::Register>&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    MutexLock lock(&mutex_);
    while (!done(received_, registrations_)) {
      if (!changed_.WaitUntil(&mutex_, deadline)) return done(received_, registrations_);
    }
    return true;
  }

  // The sequence numbers read in `session`, in order.
  std::vector<uint64_t> SequencesIn(int session) {
    MutexLock lock(&mutex_);
    std::vector<uint64_t> out;
    for (const Received& r : received_) {
      if (r.session == session) out.push_back(r.message.sequence());
    }
    return out;
  }

  std::vector<v1::Register> registrations() {
    MutexLock lock(&mutex_);
    return registrations_;
  }

 private:
  Mutex mutex_;
  CondVar changed_;
  std::vector<Received> received_ GUARDED_BY(mutex_);
  std::vector<v1::Register> registrations_ GUARDED_BY(mutex_);
};

v1::WorkerMessage Status(const std::string& job_id) {
  v1::WorkerMessage message;
  message.mutable_status()->set_job_id(job_id);
  message.mutable_status()->set_state(v1::JOB_STATE_RUNNING);
  return message;
}

v1::WorkerMessage Events(const std::string& job_id, int32_t attempt, int64_t rank_sequence) {
  v1::WorkerMessage message;
  message.mutable_events()->set_job_id(job_id);
  message.mutable_events()->set_attempt(attempt);
  message.mutable_events()->add_events()->set_rank_sequence(rank_sequence);
  return message;
}

class ControllerLinkTest : public ::testing::Test {
 protected:
  void StartController() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port_),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&controller_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  std::unique_ptr<ControllerLink> Link(size_t max_buffered = 1000) {
    LinkOptions options;
    options.controller_address = "127.0.0.1:" + std::to_string(port_);
    options.credentials = grpc::InsecureChannelCredentials();  // the stand-in serves plaintext
    options.initial_backoff = milliseconds(20);
    options.max_backoff = milliseconds(100);
    options.max_buffered = max_buffered;
    options.metrics = &metrics_;
    v1::Register registration;
    registration.set_worker_id("w1");
    return std::make_unique<ControllerLink>(
        options, registration, [] { return std::vector<std::string>(); },
        [](const v1::ControllerMessage&) {});
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + milliseconds(100));
  }

  // Known before the controller listens: a link may start first.
  int port_ = testing::FreeLoopbackPort();
  metrics::Registry registry_;
  WorkerMetrics metrics_{&registry_};
  ScriptedController controller_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(ControllerLinkTest, AfterABreakItResendsExactlyWhatWasNotAcknowledged) {
  // Session 1 acknowledges up to 2, reads 3 and 4 unacknowledged, then
  // breaks the link.
  controller_.script = [](int session, const v1::WorkerMessage& m) {
    if (session != 1) return Reply{m.sequence(), false};
    if (m.sequence() <= 2) return Reply{m.sequence(), false};
    return Reply{0, m.sequence() == 4};
  };
  StartController();
  auto link = Link();
  link->Start();
  for (const char* job : {"a", "b", "c", "d"}) link->Send(Status(job));
  ASSERT_TRUE(controller_.WaitFor([](const auto& received, const auto&) {
    return !received.empty() && received.back().session == 2 &&
           received.back().message.sequence() == 4;
  }));
  EXPECT_EQ(controller_.SequencesIn(1), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(controller_.SequencesIn(2), (std::vector<uint64_t>{3, 4}))
      << "acknowledged messages are not sent again";
  const auto registrations = controller_.registrations();
  ASSERT_EQ(registrations.size(), 2u);
  EXPECT_NE(registrations[0].link_epoch(), 0u);
  EXPECT_EQ(registrations[1].link_epoch(), registrations[0].link_epoch()) << "one daemon run";
  EXPECT_TRUE(link->WaitAcknowledged(std::chrono::steady_clock::now() + seconds(20)));
  EXPECT_EQ(link->unacknowledged(), 0u);
  EXPECT_EQ(metrics_.messages_buffered->Value(), 0);
  EXPECT_EQ(metrics_.controller_reconnects->Value(), 1) << "the second registration";
  EXPECT_EQ(metrics_.controller_connected->Value(), 1);
  EXPECT_TRUE(link->connected());
  link->Stop();
  EXPECT_EQ(metrics_.controller_connected->Value(), 0);
}

TEST_F(ControllerLinkTest, TheRegistrationsAcknowledgementFreesWhatItCovers) {
  // Session 1 acknowledges nothing and breaks after 3; session 2 says at
  // registration that 1 and 2 are recorded.
  controller_.script = [this](int session, const v1::WorkerMessage& m) {
    if (session == 1 && m.sequence() == 3) {
      controller_.acked_on_register.store(2);
      return Reply{0, true};
    }
    return Reply{session == 1 ? 0 : m.sequence(), false};
  };
  StartController();
  auto link = Link();
  link->Start();
  for (const char* job : {"a", "b", "c"}) link->Send(Status(job));
  ASSERT_TRUE(controller_.WaitFor(
      [](const auto&, const auto& registrations) { return registrations.size() >= 2; }));
  ASSERT_TRUE(controller_.WaitFor([](const auto& received, const auto&) {
    return received.back().session == 2 && received.back().message.sequence() == 3;
  }));
  EXPECT_EQ(controller_.SequencesIn(2), (std::vector<uint64_t>{3}));
  link->Stop();
}

TEST_F(ControllerLinkTest, OneJobsQueuedEventsTravelTogetherNumberedAsTheLastOfOneAttempt) {
  auto link = Link();
  link->Start();  // the controller is not up yet: everything queues
  link->Send(Events("a", 1, 1));
  link->Send(Events("a", 1, 2));
  link->Send(Events("a", 2, 1));  // the next attempt's: its own message
  link->Send(Status("a"));
  StartController();
  ASSERT_TRUE(
      controller_.WaitFor([](const auto& received, const auto&) { return received.size() >= 3; }));
  EXPECT_EQ(controller_.SequencesIn(1), (std::vector<uint64_t>{2, 3, 4}));
  link->Stop();
}

TEST_F(ControllerLinkTest, BeyondItsBoundItDropsTheOldestEventsKeepsStatusesAndSaysSo) {
  auto link = Link(/*max_buffered=*/3);
  link->Start();
  link->Send(Events("a", 1, 1));
  link->Send(Status("a"));
  link->Send(Events("b", 1, 1));
  link->Send(Events("a", 1, 2));  // over the bound: a's first batch goes
  link->Send(Events("b", 1, 2));  // and then b's
  EXPECT_EQ(link->unacknowledged(), 3u);
  EXPECT_EQ(metrics_.messages_buffered->Value(), 3);
  EXPECT_EQ(metrics_.messages_dropped->Value(), 2);
  EXPECT_EQ(metrics_.controller_connected->Value(), 0);
  StartController();
  ASSERT_TRUE(
      controller_.WaitFor([](const auto& received, const auto&) { return received.size() >= 3; }));
  EXPECT_EQ(controller_.SequencesIn(1), (std::vector<uint64_t>{2, 4, 5}))
      << "the status, then the events left (a's and b's second batches travel apart)";
  const auto registrations = controller_.registrations();
  ASSERT_EQ(registrations.size(), 1u);
  ASSERT_EQ(registrations[0].dropped_size(), 2);
  EXPECT_EQ(registrations[0].dropped(0).job_id(), "a");
  EXPECT_EQ(registrations[0].dropped(0).count(), 1);
  EXPECT_EQ(registrations[0].dropped(1).job_id(), "b");
  EXPECT_EQ(registrations[0].dropped(1).count(), 1);
  link->Stop();
}

}  // namespace
}  // namespace accumulus::worker
