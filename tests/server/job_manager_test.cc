#include "server/job_manager.h"

#include <gtest/gtest.h>

#include "common/metrics/registry.h"

namespace accumulus::server {
namespace {

v1::JobSpec SmallSpec() {
  v1::JobSpec spec;
  spec.mutable_model()->set_kind("mlp");
  spec.mutable_data()->set_samples(64);
  spec.mutable_data()->set_features(4);
  spec.set_micro_batch(8);
  spec.set_accumulation_steps(2);
  spec.mutable_optimizer()->set_lr(0.1);
  spec.set_epochs(1);
  return spec;
}

v1::Register Worker(const std::string& id, int cpu_slots) {
  v1::Register r;
  r.set_worker_id(id);
  for (int i = 0; i < cpu_slots; ++i) {
    v1::Device* d = r.add_devices();
    d->set_kind("cpu");
    d->set_index(i);
    d->set_cores(1);
  }
  return r;
}

class JobManagerTest : public ::testing::Test {
 protected:
  // A sender that records what the worker was told.
  JobManager::WorkerSender Inbox(std::vector<v1::ControllerMessage>* inbox) {
    return [inbox](const v1::ControllerMessage& m) { inbox->push_back(m); };
  }
  v1::JobState State(const std::string& id) { return jobs_.Get(id)->state(); }

  metrics::Registry registry_;
  ControllerMetrics metrics_{&registry_};
  JobManager jobs_{&metrics_};
};

TEST_F(JobManagerTest, QueuesUntilAWorkerHasAFreeSlotThenAssignsFifo) {
  const std::string first = jobs_.Submit(SmallSpec())->id();
  const std::string second = jobs_.Submit(SmallSpec())->id();
  EXPECT_EQ(State(first), v1::JOB_STATE_QUEUED);

  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  ASSERT_EQ(inbox.size(), 1u);
  EXPECT_EQ(inbox[0].assign().job_id(), first);
  ASSERT_EQ(inbox[0].assign().devices_size(), 1);
  EXPECT_EQ(inbox[0].assign().devices(0).kind(), "cpu");
  EXPECT_EQ(State(first), v1::JOB_STATE_STARTING);
  EXPECT_EQ(State(second), v1::JOB_STATE_QUEUED);

  v1::AssignmentStatus done;
  done.set_job_id(first);
  done.set_state(v1::JOB_STATE_SUCCEEDED);
  jobs_.RecordStatus("w1", done);
  EXPECT_EQ(State(first), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(inbox.size(), 2u);
  EXPECT_EQ(inbox[1].assign().job_id(), second);
}

TEST_F(JobManagerTest, ALostWorkerFailsItsJobsWithTheReason) {
  std::vector<v1::ControllerMessage> inbox;
  const uint64_t session = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs_.Submit(SmallSpec())->id();
  jobs_.WorkerGone("w1", session, "keepalive timed out");
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED);
  EXPECT_EQ(jobs_.Get(id)->reason(), "worker w1 lost: keepalive timed out");
  EXPECT_TRUE(jobs_.Workers().empty());
}

TEST_F(JobManagerTest, AReconnectKeepsTheJobsTheWorkerStillRuns) {
  std::vector<v1::ControllerMessage> inbox;
  const uint64_t old_session = jobs_.WorkerConnected(Worker("w1", 2), Inbox(&inbox));
  const std::string kept = jobs_.Submit(SmallSpec())->id();
  const std::string lost = jobs_.Submit(SmallSpec())->id();

  v1::Register again = Worker("w1", 2);
  again.add_running_job_ids(kept);
  jobs_.WorkerConnected(again, Inbox(&inbox));
  // The old link's end arrives late and must not touch the new session.
  jobs_.WorkerGone("w1", old_session, "stale");

  EXPECT_EQ(State(kept), v1::JOB_STATE_STARTING);
  EXPECT_EQ(State(lost), v1::JOB_STATE_FAILED);
  const auto workers = jobs_.Workers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].free_slots(), 1);
}

TEST_F(JobManagerTest, CancelOfAQueuedJobEndsItAtOnce) {
  const std::string id = jobs_.Submit(SmallSpec())->id();
  StatusOr<v1::Job> job = jobs_.Cancel(id, "");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_.Cancel(id, "").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(jobs_.Cancel("job-404", "").status().code(), StatusCode::kNotFound);
}

TEST_F(JobManagerTest, EventsGetConsecutiveSequenceNumbers) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs_.Submit(SmallSpec())->id();
  v1::TrainerEvents events;
  events.set_job_id(id);
  events.add_events()->mutable_step()->set_step(1);
  events.add_events()->mutable_step()->set_step(2);
  jobs_.RecordEvents("w1", events);
  jobs_.RecordEvents("someone-else", events);  // not its job: ignored

  auto log = jobs_.Events(id);
  ASSERT_TRUE(log.ok());
  // queued, starting, step 1, step 2
  ASSERT_EQ((*log)->last_sequence(), 4);
  for (int64_t seq = 0; seq < 4; ++seq) {
    v1::JobEvent event;
    ASSERT_TRUE((*log)->Read(seq, &event));
    EXPECT_EQ(event.sequence(), seq + 1);
    EXPECT_EQ(event.job_id(), id);
  }
  EXPECT_EQ(jobs_.Get(id)->steps_done(), 2);
}

TEST_F(JobManagerTest, RejectsMultiDeviceJobsForNow) {
  v1::JobSpec spec = SmallSpec();
  spec.set_devices(2);
  EXPECT_EQ(jobs_.Submit(spec).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace accumulus::server
