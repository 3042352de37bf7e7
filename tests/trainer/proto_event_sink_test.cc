// The trainer's side of the pipe: which messages the worker reads, in which
// batches, for each way the trainer reports.
#include "worker/trainer/proto_event_sink.h"

#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "worker/trainer/trainer_exit.h"

namespace accumulus::trainer {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

class ProtoEventSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    input_ = std::make_unique<google::protobuf::io::FileInputStream>(read_fd_);
  }
  void TearDown() override {
    input_.reset();
    ::close(read_fd_);
    ::close(write_fd_);
  }

  // The next message on the pipe; blocks until the sink writes one.
  v1::TrainerMessage Next() {
    v1::TrainerMessage message;
    bool clean_eof = false;
    EXPECT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&message, input_.get(),
                                                                         &clean_eof));
    return message;
  }

  // The steps of a batch, in order.
  static std::vector<int64_t> Steps(const v1::TrainerMessage& message) {
    std::vector<int64_t> steps;
    for (const v1::JobEvent& e : message.events().events()) {
      if (e.has_step()) steps.push_back(e.step().step());
    }
    return steps;
  }

  static engine::StepReport Step(int64_t step) {
    engine::StepReport report;
    report.step = step;
    return report;
  }

  int read_fd_ = -1;
  int write_fd_ = -1;
  std::unique_ptr<google::protobuf::io::FileInputStream> input_;
};

TEST_F(ProtoEventSinkTest, WithoutADelayEachStepIsItsOwnMessage) {
  ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), milliseconds(0));
  for (int64_t step = 1; step <= 3; ++step) sink.OnStep(Step(step));
  sink.Exit(TrainerExitFor(Status::Ok()));
  for (int64_t step = 1; step <= 3; ++step) {
    EXPECT_EQ(Steps(Next()), std::vector<int64_t>{step});
  }
  EXPECT_EQ(Next().exit().state(), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(ProtoEventSinkTest, EveryEventIsNumberedByItsRankInTheOrderWritten) {
  v1::RuntimeInfo runtime;
  runtime.set_rank(3);
  ProtoEventSink sink(write_fd_, runtime, milliseconds(0));
  sink.OnRun(engine::RunReport());
  sink.OnStep(Step(1));
  sink.OnLog(engine::LogLevel::kInfo, "checkpoint");
  sink.OnSplitChange({2, 4, 8, "out of memory"});
  sink.OnStep(Step(2));
  for (int64_t sequence = 1; sequence <= 5; ++sequence) {
    const v1::TrainerMessage message = Next();
    ASSERT_EQ(message.events().events_size(), 1);
    EXPECT_EQ(message.events().events(0).rank(), 3);
    EXPECT_EQ(message.events().events(0).rank_sequence(), sequence);
  }
}

TEST_F(ProtoEventSinkTest, HeldStepsGoOutWithTheNextLogInOrder) {
  ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), hours(1));
  for (int64_t step = 1; step <= 3; ++step) sink.OnStep(Step(step));
  sink.OnLog(engine::LogLevel::kWarning, "after step 3");
  const v1::TrainerMessage batch = Next();
  ASSERT_EQ(batch.events().events_size(), 4);
  EXPECT_EQ(Steps(batch), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(batch.events().events(3).log().text(), "after step 3");
  // Each event keeps the time it was reported, not the time it was written.
  for (int i = 1; i < 4; ++i) {
    const auto& before = batch.events().events(i - 1).time();
    const auto& after = batch.events().events(i).time();
    EXPECT_LE(std::make_pair(before.seconds(), before.nanos()),
              std::make_pair(after.seconds(), after.nanos()));
  }
}

TEST_F(ProtoEventSinkTest, TheRunsPlanIsNotHeld) {
  ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), hours(1));
  engine::RunReport run;
  run.steps_total = 7;
  sink.OnRun(run);
  const v1::TrainerMessage batch = Next();
  ASSERT_EQ(batch.events().events_size(), 1);
  EXPECT_EQ(batch.events().events(0).runtime().steps_total(), 7);
}

TEST_F(ProtoEventSinkTest, AHeldStepIsWrittenWhenDueWithoutAnotherReport) {
  ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), milliseconds(20));
  // Within the interval that starts with the sink: held. Nothing else is
  // reported, so only the deadline can write it.
  sink.OnStep(Step(1));
  EXPECT_EQ(Steps(Next()), std::vector<int64_t>{1});
  sink.OnStep(Step(2));
  EXPECT_EQ(Steps(Next()), std::vector<int64_t>{2});
}

TEST_F(ProtoEventSinkTest, AStepAfterAQuietIntervalIsNotHeld) {
  ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), milliseconds(10));
  // No message for longer than the interval (the precondition, not a wait
  // for another thread): a slow job's step has nothing to wait for.
  std::this_thread::sleep_for(milliseconds(30));
  sink.OnStep(Step(1));
  pollfd ready = {read_fd_, POLLIN, 0};
  EXPECT_EQ(::poll(&ready, 1, /*timeout=*/0), 1) << "written by the report itself";
  EXPECT_EQ(Steps(Next()), std::vector<int64_t>{1});
}

TEST_F(ProtoEventSinkTest, TheExitComesAfterTheHeldSteps) {
  ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), hours(1));
  sink.OnStep(Step(1));
  sink.OnStep(Step(2));
  sink.Exit(TrainerExitFor(Status::Cancelled("cancelled")));
  EXPECT_EQ(Steps(Next()), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Next().exit().state(), v1::JOB_STATE_CANCELLED);
}

TEST_F(ProtoEventSinkTest, HeldStepsAreWrittenWhenTheSinkGoesAway) {
  {
    ProtoEventSink sink(write_fd_, v1::RuntimeInfo(), hours(1));
    sink.OnStep(Step(1));
  }
  EXPECT_EQ(Steps(Next()), std::vector<int64_t>{1});
}

}  // namespace
}  // namespace accumulus::trainer
