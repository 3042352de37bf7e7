// The watch stream over real gRPC on loopback: a replay from any point then
// the live tail, ending after the job's final event; a watcher that reads
// nothing delays no other watcher; a watcher that goes away in the middle of
// a write ends its stream and leaves the log; a stopping controller ends
// the streams. The log keeps 4 events in memory: replays read the rest
// from its store.
#include "server/watch_reactor.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/controller.grpc.pb.h"
#include "common/metrics/registry.h"
#include "common/mutex.h"
#include "server/controller_metrics.h"
#include "server/event_log.h"

namespace accumulus::server {
namespace {

// WatchJob of the one job whose log the test holds.
class OneJobService final : public v1::Controller::CallbackService {
 public:
  OneJobService(std::shared_ptr<EventLog> log, ControllerMetrics* metrics)
      : log_(std::move(log)), metrics_(metrics) {}
  grpc::ServerWriteReactor<v1::JobEvent>* WatchJob(grpc::CallbackServerContext*,
                                                   const v1::WatchJobRequest* request) override {
    return new WatchReactor(log_, request->after_sequence(), metrics_);
  }

 private:
  const std::shared_ptr<EventLog> log_;
  ControllerMetrics* const metrics_;
};

class WatchReactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
  }

  void Append(const std::string& text, bool closes = false) {
    v1::JobEvent event;
    event.mutable_log()->set_text(text);
    const v1::JobEvent stored = log_->Append(std::move(event), closes);
    {
      MutexLock lock(&stored_mutex_);
      stored_.push_back(stored);
    }
    log_->Notify();
  }

  // The state database, as far as the log is concerned: every event
  // appended. The log keeps only the newest few in memory, so that a replay
  // reads the rest from here (in batches) as a controller's would.
  StatusOr<std::vector<v1::JobEvent>> Stored(int64_t after, int max) {
    MutexLock lock(&stored_mutex_);
    std::vector<v1::JobEvent> out;
    for (size_t i = static_cast<size_t>(after);
         i < stored_.size() && out.size() < static_cast<size_t>(max); ++i) {
      out.push_back(stored_[i]);
    }
    return out;
  }

  // A watcher on its own channel, as separate clients are.
  struct Watcher {
    std::unique_ptr<v1::Controller::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader;
  };
  std::unique_ptr<Watcher> Watch(int64_t after) {
    auto w = std::make_unique<Watcher>();
    w->stub =
        v1::Controller::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
    v1::WatchJobRequest request;
    request.set_job_id("job-1");
    request.set_after_sequence(after);
    w->reader = w->stub->WatchJob(&w->context, request);
    return w;
  }

  Mutex stored_mutex_;
  std::vector<v1::JobEvent> stored_ GUARDED_BY(stored_mutex_);
  const std::shared_ptr<EventLog> log_ = std::make_shared<EventLog>(
      "job-1", EventLog::Options{4, [this](int64_t after, int max) { return Stored(after, max); }});
  metrics::Registry registry_;
  ControllerMetrics metrics_{&registry_};
  OneJobService service_{log_, &metrics_};
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(WatchReactorTest, ItReplaysFromTheRequestedPointFollowsAndEndsAfterTheFinalEvent) {
  for (const char* text : {"one", "two", "three"}) Append(text);
  auto watcher = Watch(/*after=*/1);
  v1::JobEvent event;
  ASSERT_TRUE(watcher->reader->Read(&event));
  EXPECT_EQ(event.sequence(), 2);
  ASSERT_TRUE(watcher->reader->Read(&event));
  EXPECT_EQ(event.log().text(), "three");
  Append("four", /*closes=*/true);  // live, after the replay
  ASSERT_TRUE(watcher->reader->Read(&event));
  EXPECT_EQ(event.sequence(), 4);
  EXPECT_FALSE(watcher->reader->Read(&event));
  EXPECT_TRUE(watcher->reader->Finish().ok());
}

// A stopping controller ends its open streams once they have sent what is
// recorded, with a status a client retries; a stream that starts after
// that ends at once.
TEST_F(WatchReactorTest, EndingTheStreamsSendsWhatIsRecordedThenUnavailable) {
  for (const char* text : {"one", "two"}) Append(text);
  auto watcher = Watch(0);
  v1::JobEvent event;
  ASSERT_TRUE(watcher->reader->Read(&event));
  EXPECT_EQ(event.sequence(), 1);
  Append("three");
  log_->EndStreams();
  std::vector<int64_t> rest;
  while (watcher->reader->Read(&event)) rest.push_back(event.sequence());
  EXPECT_EQ(rest, (std::vector<int64_t>{2, 3})) << "nothing recorded is left behind";
  const grpc::Status ended = watcher->reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ended.error_message(), "the controller is shutting down");

  auto late = Watch(3);
  EXPECT_FALSE(late->reader->Read(&event));
  EXPECT_EQ(late->reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(WatchReactorTest, AWatcherThatReadsNothingDelaysNoOther) {
  auto slow = Watch(0);  // never reads until the end
  auto fast = Watch(0);
  const std::string big(64 * 1024, 'x');  // far beyond the transport's window in total
  constexpr int kEvents = 400;
  for (int i = 1; i <= kEvents; ++i) Append(big + std::to_string(i), i == kEvents);
  v1::JobEvent event;
  int64_t read = 0;
  while (fast->reader->Read(&event)) ASSERT_EQ(event.sequence(), ++read);
  EXPECT_EQ(read, kEvents);
  EXPECT_TRUE(fast->reader->Finish().ok());
  // The slow one still gets everything, in order, once it reads.
  read = 0;
  while (slow->reader->Read(&event)) ASSERT_EQ(event.sequence(), ++read);
  EXPECT_EQ(read, kEvents);
  EXPECT_TRUE(slow->reader->Finish().ok());
}

TEST_F(WatchReactorTest, AWatcherThatLeavesMidWriteEndsItsStreamAndLeavesTheLog) {
  const std::string big(256 * 1024, 'x');
  for (int i = 0; i < 40; ++i) Append(big);
  auto watcher = Watch(0);
  v1::JobEvent event;
  ASSERT_TRUE(watcher->reader->Read(&event));  // the next writes are in flight, blocked
  EXPECT_EQ(metrics_.watchers->Value(), 1);
  watcher->context.TryCancel();
  EXPECT_EQ(watcher->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // Shutdown waits for every stream's reactor to finish: one that missed
  // the cancel would hang here.
  server_->Shutdown();
  EXPECT_EQ(metrics_.watchers->Value(), 0);
  Append("after the watcher left", /*closes=*/true);  // notifies no one
}

}  // namespace
}  // namespace accumulus::server
