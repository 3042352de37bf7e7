#include "server/job_manager.h"

#include <gtest/gtest.h>

#include <deque>
#include <regex>
#include <set>

#include "common/job_attempts.h"
#include "common/metrics/registry.h"
#include "common/mutex.h"
#include "server/event_archive.h"
#include "tests/support/temp_dir.h"

namespace accumulus::server {
namespace {

// A job's log once everything recorded so far is durable (the store's
// writer shows events to watchers only then).
std::shared_ptr<EventLog> Log(JobManager& jobs, const std::string& job_id) {
  jobs.Flush();
  return *jobs.Events(job_id);
}

// The event after sequence number `after`, if the log has one.
bool Read(const EventLog& log, int64_t after, v1::JobEvent* out) {
  std::deque<v1::JobEvent> one;
  EXPECT_TRUE(log.ReadAfter(after, 1, &one).ok());
  if (one.empty()) return false;
  *out = one.front();
  return true;
}

v1::JobSpec SmallSpec() {
  v1::JobSpec spec;
  spec.mutable_model()->set_kind(v1::MODEL_KIND_MLP);
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
  r.set_advertise_address(id + ".local");
  r.set_rendezvous_port_first(29500);
  r.set_rendezvous_port_count(1);
  for (int i = 0; i < cpu_slots; ++i) {
    v1::Device* d = r.add_devices();
    d->set_kind(v1::DEVICE_KIND_CPU);
    d->set_index(i);
    d->set_cores(1);
  }
  return r;
}

v1::AssignmentStatus Ended(const std::string& job_id, v1::JobState state, const std::string& reason,
                           bool permanent = false,
                           v1::FailureClass failure_class = v1::FAILURE_CLASS_UNSPECIFIED) {
  v1::AssignmentStatus s;
  s.set_job_id(job_id);
  s.set_state(state);
  s.set_reason(reason);
  s.set_permanent(permanent);
  s.set_failure_class(failure_class);
  return s;
}

// A lost worker's ranks already past their lease: nothing to wait for.
constexpr AwakeClock::time_point kFenceOver{};

// Who submits the jobs of these tests.
constexpr char kOwner[] = "alice";

class JobManagerTest : public ::testing::Test {
 protected:
  // A sender that records what the worker was told.
  JobManager::WorkerSender Inbox(std::vector<v1::ControllerMessage>* inbox) {
    return [inbox](const v1::ControllerMessage& m) { inbox->push_back(m); };
  }
  v1::JobState State(const std::string& id) { return jobs_.Get(id)->state(); }

  metrics::Registry registry_;
  ControllerMetrics metrics_{&registry_};
  AwakeClock clock_;
  JobManager jobs_{&metrics_, &clock_};
};

TEST_F(JobManagerTest, JobIdsAreRandomAndNeverRepeat) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
    ASSERT_TRUE(std::regex_match(id, std::regex("job-[0-9a-hjkmnp-tv-z]{12}"))) << id;
    EXPECT_TRUE(ids.insert(id).second) << id;
  }
}

TEST_F(JobManagerTest, ARetriedSubmitReturnsTheJobItsRequestMade) {
  const StatusOr<v1::Job> first = jobs_.Submit(SmallSpec(), "alice", "nightly-1");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->request_id(), "nightly-1");
  const StatusOr<v1::Job> retry = jobs_.Submit(SmallSpec(), "alice", "nightly-1");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_EQ(retry->id(), first->id());
  EXPECT_EQ(jobs_.List().size(), 1u) << "no second job";

  // Another owner's request of the same id is another request.
  const StatusOr<v1::Job> bobs = jobs_.Submit(SmallSpec(), "bob", "nightly-1");
  ASSERT_TRUE(bobs.ok());
  EXPECT_NE(bobs->id(), first->id());

  // The same id for another spec is a mistake, not a retry.
  v1::JobSpec other = SmallSpec();
  other.set_max_steps(other.max_steps() + 1);
  const StatusOr<v1::Job> reused = jobs_.Submit(other, "alice", "nightly-1");
  EXPECT_EQ(reused.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(reused.status().message().find("request_id nightly-1 made " + first->id() +
                                           " with a different spec"),
            std::string::npos)
      << reused.status().message();
  EXPECT_EQ(jobs_.List().size(), 2u);

  for (const std::string& bad :
       {std::string(129, 'a'), std::string("a b"), std::string("x\n"), std::string("é")}) {
    const StatusOr<v1::Job> refused = jobs_.Submit(SmallSpec(), "alice", bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(refused.status().message().find("request_id"), std::string::npos);
  }
  EXPECT_EQ(jobs_.List().size(), 2u);
}

// Every page of a request, its ids in order.
std::vector<std::string> AllPages(JobManager& jobs, v1::ListJobsRequest request, int* pages) {
  std::vector<std::string> ids;
  *pages = 0;
  do {
    const StatusOr<v1::ListJobsResponse> page = jobs.ListPage(request);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    ++*pages;
    EXPECT_LE(page->jobs_size(), request.page_size() == 0 ? 100 : request.page_size());
    for (const v1::JobSummary& job : page->jobs()) ids.push_back(job.id());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return ids;
}

TEST_F(JobManagerTest, ListingPagesThroughEveryJobOnceInSubmissionOrder) {
  std::vector<std::string> submitted;
  for (int i = 0; i < 250; ++i) submitted.push_back(jobs_.Submit(SmallSpec(), kOwner)->id());
  v1::ListJobsRequest request;
  int pages = 0;
  EXPECT_EQ(AllPages(jobs_, request, &pages), submitted);
  EXPECT_EQ(pages, 3) << "100, 100, 50";
  request.set_page_size(7);
  EXPECT_EQ(AllPages(jobs_, request, &pages), submitted);
  EXPECT_EQ(pages, 36);
  request.set_page_size(5000);
  EXPECT_EQ(AllPages(jobs_, request, &pages), submitted);
  EXPECT_EQ(pages, 1) << "page_size beyond 1000 is 1000";

  // A job that ends between two pages is neither lost nor listed twice.
  request.set_page_size(100);
  StatusOr<v1::ListJobsResponse> first = jobs_.ListPage(request);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(jobs_.Cancel(submitted[150], "").ok());
  request.set_page_token(first->next_page_token());
  std::vector<std::string> ids;
  for (const v1::JobSummary& job : first->jobs()) ids.push_back(job.id());
  for (const std::string& id : AllPages(jobs_, request, &pages)) ids.push_back(id);
  EXPECT_EQ(ids, submitted);
}

TEST_F(JobManagerTest, ListingFiltersByStateOwnerAndLabels) {
  v1::JobSpec vision = SmallSpec();
  (*vision.mutable_labels())["team"] = "vision";
  (*vision.mutable_labels())["sweep"] = "7";
  const std::string a = jobs_.Submit(vision, "alice")->id();
  const std::string b = jobs_.Submit(SmallSpec(), "bob")->id();
  const std::string c = jobs_.Submit(vision, "bob")->id();
  ASSERT_TRUE(jobs_.Cancel(c, "").ok());
  auto ids = [&](v1::ListJobsRequest request) {
    int pages = 0;
    return AllPages(jobs_, std::move(request), &pages);
  };
  v1::ListJobsRequest by_owner;
  by_owner.set_owner("bob");
  EXPECT_EQ(ids(by_owner), (std::vector<std::string>{b, c}));
  v1::ListJobsRequest by_state;
  by_state.add_states(v1::JOB_STATE_CANCELLED);
  by_state.add_states(v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(ids(by_state), (std::vector<std::string>{c}));
  v1::ListJobsRequest by_label;
  (*by_label.mutable_labels())["team"] = "vision";
  EXPECT_EQ(ids(by_label), (std::vector<std::string>{a, c}));
  (*by_label.mutable_labels())["sweep"] = "8";
  EXPECT_TRUE(ids(by_label).empty());
  v1::ListJobsRequest all_of_them = by_owner;
  all_of_them.add_states(v1::JOB_STATE_QUEUED);
  EXPECT_EQ(ids(all_of_them), (std::vector<std::string>{b}));

  const v1::JobSummary summary = jobs_.ListPage(by_owner)->jobs(0);
  EXPECT_EQ(summary.owner(), "bob");
  EXPECT_EQ(summary.batch().global_batch(), 16);
  EXPECT_EQ(summary.steps_total(), 4);
  EXPECT_FALSE(summary.has_loss());
}

TEST_F(JobManagerTest, ASelectiveFilterReturnsShortPagesThatGoOn) {
  for (int i = 0; i < kMaxJobsScannedPerPage + 10; ++i) {
    ASSERT_TRUE(jobs_.Submit(SmallSpec(), "alice").ok());
  }
  const std::string last = jobs_.Submit(SmallSpec(), "bob")->id();
  v1::ListJobsRequest request;
  request.set_owner("bob");
  const StatusOr<v1::ListJobsResponse> first = jobs_.ListPage(request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->jobs_size(), 0) << "it looked at no more than its share";
  EXPECT_FALSE(first->next_page_token().empty());
  request.set_page_token(first->next_page_token());
  const StatusOr<v1::ListJobsResponse> second = jobs_.ListPage(request);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->jobs_size(), 1);
  EXPECT_EQ(second->jobs(0).id(), last);
  EXPECT_TRUE(second->next_page_token().empty());
}

TEST_F(JobManagerTest, ABadListRequestNamesEveryField) {
  v1::ListJobsRequest request;
  request.set_page_size(-1);
  request.set_page_token("not-a-token");
  request.add_states(static_cast<v1::JobState>(99));
  const StatusOr<v1::ListJobsResponse> page = jobs_.ListPage(request);
  ASSERT_EQ(page.status().code(), StatusCode::kInvalidArgument);
  std::vector<std::string> fields;
  for (const FieldViolation& v : page.status().field_violations()) fields.push_back(v.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"page_size", "page_token", "states[0]"}));
  EXPECT_NE(page.status().message().find("page_size -1 must not be negative"), std::string::npos);
}

TEST_F(JobManagerTest, ASummaryIsBoundedWhateverTheJobHolds) {
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  ASSERT_TRUE(jobs_.Cancel(id, std::string(100000, 'r') + "\xE2\x82\xAC").ok());
  const v1::JobSummary summary = jobs_.ListPage(v1::ListJobsRequest())->jobs(0);
  EXPECT_LE(summary.reason().size(), kMaxSummaryReasonBytes);
  EXPECT_EQ(summary.reason().substr(summary.reason().size() - 3), "...");
}

TEST_F(JobManagerTest, ASpecAndARequestIdAreCheckedTogether) {
  v1::JobSpec spec = SmallSpec();
  spec.set_micro_batch(-1);
  spec.mutable_optimizer()->set_lr(0);
  const StatusOr<v1::Job> refused = jobs_.Submit(spec, kOwner, "bad id");
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  std::vector<std::string> fields;
  for (const FieldViolation& v : refused.status().field_violations()) fields.push_back(v.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"micro_batch", "optimizer.lr", "request_id"}));
  EXPECT_TRUE(jobs_.List().empty()) << "nothing stored for a refused spec";
}

TEST_F(JobManagerTest, QueuesUntilAWorkerHasAFreeSlotThenAssignsFifo) {
  const std::string first = jobs_.Submit(SmallSpec(), kOwner)->id();
  const std::string second = jobs_.Submit(SmallSpec(), kOwner)->id();
  EXPECT_EQ(State(first), v1::JOB_STATE_QUEUED);

  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  ASSERT_EQ(inbox.size(), 1u);
  EXPECT_EQ(inbox[0].assign().job_id(), first);
  ASSERT_EQ(inbox[0].assign().devices_size(), 1);
  EXPECT_EQ(inbox[0].assign().devices(0).kind(), v1::DEVICE_KIND_CPU);
  EXPECT_EQ(State(first), v1::JOB_STATE_STARTING);
  EXPECT_EQ(State(second), v1::JOB_STATE_QUEUED);

  const v1::AssignmentStatus done = Ended(first, v1::JOB_STATE_SUCCEEDED, "");
  jobs_.RecordStatus("w1", done);
  EXPECT_EQ(State(first), v1::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(inbox.size(), 2u);
  EXPECT_EQ(inbox[1].assign().job_id(), second);
}

TEST_F(JobManagerTest, ALostWorkerFailsItsJobsWithTheReason) {
  std::vector<v1::ControllerMessage> inbox;
  const uint64_t session = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  jobs_.WorkerGone("w1", session, "keepalive timed out", kFenceOver);
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED);
  EXPECT_EQ(jobs_.Get(id)->reason(), "worker w1 lost: keepalive timed out");
  EXPECT_TRUE(jobs_.Workers().empty());
}

// A worker whose link broke while it was heard from recently may still run
// its ranks, and may come back: until the lost-worker timeout has passed
// since its last message the job keeps its attempt and its slots there —
// not placed again, not even on a free worker. Back without the job, its
// ranks are known to have stopped, and the job restarts.
TEST_F(JobManagerTest, ABrokenLinksRanksKeepTheirSlotsUntilTheWorkerIsBackOrLost) {
  std::vector<v1::ControllerMessage> a, b;
  const uint64_t w1 = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  ASSERT_EQ(a.back().assign().attempt(), 1);
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  jobs_.WorkerGone("w1", w1, "its link ended", AwakeClock::time_point::max());
  jobs_.Expire();
  EXPECT_EQ(State(id), v1::JOB_STATE_STARTING) << "attempt 1 goes on while w1 may come back";
  EXPECT_TRUE(b.empty()) << "placed on w2 while attempt 1 may still run on w1";

  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));  // without the job
  ASSERT_FALSE(b.empty() && a.back().has_assign() == false);
  const v1::ControllerMessage& placed = a.back().has_assign() ? a.back() : b.back();
  EXPECT_EQ(placed.assign().attempt(), 2);
  EXPECT_EQ(State(id), v1::JOB_STATE_STARTING);
  EXPECT_NE(jobs_.Get(id)->attempts(0).reason().find("worker w1 reconnected without the job"),
            std::string::npos)
      << jobs_.Get(id)->attempts(0).reason();
}

// A link that broke and came back (a network blip, a proxy's reset) costs
// the job nothing: the worker reconnects still running it, and the attempt
// goes on, with no restart spent (there are none to spend here).
TEST_F(JobManagerTest, AWorkerBackWithItsRanksBeforeTheTimeoutKeepsTheirAttempt) {
  std::vector<v1::ControllerMessage> a;
  const uint64_t w1 = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();  // max_restarts 0
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_RUNNING, ""));
  jobs_.WorkerGone("w1", w1, "its link ended", AwakeClock::time_point::max());
  v1::Register back = Worker("w1", 1);
  back.add_running_job_ids(id);
  a.clear();
  jobs_.WorkerConnected(back, Inbox(&a));
  EXPECT_TRUE(a.empty()) << "no cancel, no new assignment";
  const v1::Job job = *jobs_.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job.attempt(), 1);
  EXPECT_EQ(job.attempts_size(), 0);
  EXPECT_EQ(jobs_.Workers().at(0).job_ids_size(), 1) << "its slot is the job's again";
  EXPECT_EQ(jobs_.Workers().at(0).free_slots(), 0);
}

// A cancel while the worker is away finds no link to tell it: the worker
// is told when it is back, still running the job.
TEST_F(JobManagerTest, ACancelWhileTheWorkerIsAwayReachesItWhenItIsBack) {
  std::vector<v1::ControllerMessage> a;
  const uint64_t w1 = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_RUNNING, ""));
  jobs_.WorkerGone("w1", w1, "its link ended", AwakeClock::time_point::max());
  ASSERT_TRUE(jobs_.Cancel(id, "not needed").ok());
  EXPECT_EQ(State(id), v1::JOB_STATE_CANCELLING);
  v1::Register back = Worker("w1", 1);
  back.add_running_job_ids(id);
  jobs_.WorkerConnected(back, Inbox(&a));
  ASSERT_TRUE(a.back().has_cancel());
  EXPECT_EQ(a.back().cancel().job_id(), id);
  EXPECT_EQ(a.back().cancel().reason(), "not needed");
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_CANCELLED, "stopped"));
  EXPECT_EQ(State(id), v1::JOB_STATE_CANCELLED);
}

// Events of a superseded attempt are recorded, once each and marked stale,
// and are never the job's progress.
TEST_F(JobManagerTest, ASupersededAttemptsEventsAreRecordedAsStaleOnce) {
  std::vector<v1::ControllerMessage> a, b;
  const uint64_t w1 = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  auto steps = [&](int32_t attempt, int64_t first, int64_t last) {
    v1::TrainerEvents events;
    events.set_job_id(id);
    events.set_attempt(attempt);
    for (int64_t step = first; step <= last; ++step) {
      v1::JobEvent* event = events.add_events();
      event->mutable_step()->set_step(step);
      event->set_rank_sequence(step);  // the trainer's only events
    }
    return events;
  };
  jobs_.RecordEvents("w1", steps(1, 1, 2));
  jobs_.WorkerGone("w1", w1, "lost", kFenceOver);
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  ASSERT_EQ(b.back().assign().attempt(), 2);
  jobs_.RecordEvents("w2", steps(2, 1, 1));

  // w1 comes back and delivers what it held, resending steps 1 and 2.
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.RecordEvents("w1", steps(1, 1, 4));
  jobs_.RecordEvents("w1", steps(1, 3, 4));  // resent again

  EXPECT_EQ(jobs_.Get(id)->steps_done(), 1) << "attempt 2's progress only";
  std::vector<std::string> seen;
  const std::shared_ptr<EventLog> log = Log(jobs_, id);
  v1::JobEvent e;
  for (int64_t after = 0; Read(*log, after, &e); ++after) {
    if (!e.has_step()) continue;
    seen.push_back(std::to_string(e.attempt()) + (e.stale() ? "s" : "") + ":" +
                   std::to_string(e.step().step()));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"1:1", "1:2", "2:1", "1s:3", "1s:4"}));
}

TEST_F(JobManagerTest, AReconnectKeepsTheJobsTheWorkerStillRuns) {
  std::vector<v1::ControllerMessage> inbox;
  const uint64_t old_session = jobs_.WorkerConnected(Worker("w1", 2), Inbox(&inbox));
  const std::string kept = jobs_.Submit(SmallSpec(), kOwner)->id();
  const std::string lost = jobs_.Submit(SmallSpec(), kOwner)->id();

  v1::Register again = Worker("w1", 2);
  again.add_running_job_ids(kept);
  jobs_.WorkerConnected(again, Inbox(&inbox));
  // The old link's end arrives late and must not touch the new session.
  jobs_.WorkerGone("w1", old_session, "stale", kFenceOver);

  EXPECT_EQ(State(kept), v1::JOB_STATE_STARTING);
  EXPECT_EQ(State(lost), v1::JOB_STATE_FAILED);
  const auto workers = jobs_.Workers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].free_slots(), 1);
}

TEST_F(JobManagerTest, CancelOfAQueuedJobEndsItAtOnce) {
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  StatusOr<v1::Job> job = jobs_.Cancel(id, "");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_.Cancel(id, "").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(jobs_.Cancel("job-404", "").status().code(), StatusCode::kNotFound);
}

TEST_F(JobManagerTest, EventsGetConsecutiveSequenceNumbers) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  v1::TrainerEvents events;
  events.set_job_id(id);
  events.add_events()->mutable_step()->set_step(1);
  events.add_events()->mutable_step()->set_step(2);
  jobs_.RecordEvents("w1", events);
  jobs_.RecordEvents("someone-else", events);  // not its job: ignored

  jobs_.Flush();
  auto log = jobs_.Events(id);
  ASSERT_TRUE(log.ok());
  // queued, starting, step 1, step 2
  ASSERT_EQ((*log)->last_sequence(), 4);
  for (int64_t seq = 0; seq < 4; ++seq) {
    v1::JobEvent event;
    ASSERT_TRUE(Read(**log, seq, &event));
    EXPECT_EQ(event.sequence(), seq + 1);
    EXPECT_EQ(event.job_id(), id);
  }
  EXPECT_EQ(jobs_.Get(id)->steps_done(), 2);
  // A client that wants what has happened so far watches up to this.
  EXPECT_EQ(jobs_.Get(id)->last_event_sequence(), 4);
}

TEST_F(JobManagerTest, CheckpointsWrittenAndNotWrittenAreCountedPerJob) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  const std::string written = "accumulus_job_checkpoints_total{job_id=\"" + id + "\"} ";
  const std::string failed = "accumulus_job_checkpoint_failures_total{job_id=\"" + id + "\"} ";
  EXPECT_NE(registry_.Render().find(failed + "0"), std::string::npos) << "from 0 at placement";
  v1::TrainerEvents events;
  events.set_job_id(id);
  events.add_events()->mutable_checkpoint()->set_step(3);
  v1::CheckpointFailed* not_written = events.add_events()->mutable_checkpoint_failed();
  not_written->set_step(6);
  not_written->set_reason("cannot write /ckpt/j/.tmp: No space left on device");
  not_written->set_resumes_after_step(3);
  jobs_.RecordEvents("w1", events);
  const std::string exposition = registry_.Render();
  EXPECT_NE(exposition.find(written + "1"), std::string::npos) << exposition;
  EXPECT_NE(exposition.find(failed + "1"), std::string::npos) << exposition;
}

v1::JobSpec Devices(int n) {
  v1::JobSpec spec = SmallSpec();
  spec.set_devices(n);
  return spec;
}

TEST_F(JobManagerTest, GangPlacesAllRanksAcrossWorkersWithOneRendezvous) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  const std::string id = jobs_.Submit(Devices(2), kOwner)->id();
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].assign().ranks(0), 0);  // ties go by worker id
  EXPECT_EQ(b[0].assign().ranks(0), 1);
  for (const auto* inbox : {&a, &b}) {
    EXPECT_EQ((*inbox)[0].assign().world_size(), 2);
    EXPECT_EQ((*inbox)[0].assign().rendezvous_host(), "w1.local");
    EXPECT_EQ((*inbox)[0].assign().rendezvous_port(), 29500);
  }
  const v1::Job job = *jobs_.Get(id);
  ASSERT_EQ(job.placements_size(), 2);
  EXPECT_EQ(job.placements(1).worker_id(), "w2");

  // One worker's ranks finishing is not the job finishing.
  const v1::AssignmentStatus done = Ended(id, v1::JOB_STATE_SUCCEEDED, "");
  jobs_.RecordStatus("w2", done);
  EXPECT_NE(State(id), v1::JOB_STATE_SUCCEEDED);
  jobs_.RecordStatus("w1", done);
  EXPECT_EQ(State(id), v1::JOB_STATE_SUCCEEDED);
}

TEST_F(JobManagerTest, PacksOntoOneWorkerWhenItFits) {
  std::vector<v1::ControllerMessage> big, small;
  jobs_.WorkerConnected(Worker("big", 4), Inbox(&big));
  jobs_.WorkerConnected(Worker("small", 2), Inbox(&small));
  ASSERT_TRUE(jobs_.Submit(Devices(2), kOwner).ok());
  EXPECT_TRUE(big.empty()) << "best fit leaves the larger worker whole";
  ASSERT_EQ(small.size(), 1u);
  EXPECT_EQ(small[0].assign().ranks_size(), 2);
}

TEST_F(JobManagerTest, AJobLargerThanThePoolWaitsAsideWithAReason) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  const std::string big = jobs_.Submit(Devices(3), kOwner)->id();
  EXPECT_EQ(State(big), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(jobs_.Get(big)->reason(), "needs 3 device slots; the pool has 2 (w1 1, w2 1)");
  // It blocks nobody behind it.
  const std::string small = jobs_.Submit(Devices(2), kOwner)->id();
  EXPECT_EQ(State(small), v1::JOB_STATE_STARTING);
}

TEST_F(JobManagerTest, GangJobsRunOneAfterTheOtherWithoutInterleaving) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  const std::string first = jobs_.Submit(Devices(2), kOwner)->id();
  const std::string second = jobs_.Submit(Devices(2), kOwner)->id();
  EXPECT_EQ(State(second), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(a.size(), 1u);

  const v1::AssignmentStatus done = Ended(first, v1::JOB_STATE_SUCCEEDED, "");
  jobs_.RecordStatus("w1", done);
  EXPECT_EQ(State(second), v1::JOB_STATE_QUEUED) << "w2 still holds a rank of the first job";
  jobs_.RecordStatus("w2", done);
  EXPECT_EQ(State(second), v1::JOB_STATE_STARTING);
  EXPECT_EQ(a.back().assign().job_id(), second);
  EXPECT_EQ(b.back().assign().job_id(), second);
}

TEST_F(JobManagerTest, ARankFailureFailsTheJobAndCancelsTheOtherRanks) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  const std::string id = jobs_.Submit(Devices(2), kOwner)->id();
  const v1::AssignmentStatus failed =
      Ended(id, v1::JOB_STATE_FAILED, "rank 1 on worker w2: killed by signal 9");
  jobs_.RecordStatus("w2", failed);
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED);
  EXPECT_EQ(jobs_.Get(id)->reason(), "rank 1 on worker w2: killed by signal 9");
  ASSERT_TRUE(a.back().has_cancel());
  EXPECT_EQ(a.back().cancel().job_id(), id);
  // w1 is free once its rank confirms.
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_CANCELLED, failed.reason()));
  for (const auto& w : jobs_.Workers()) EXPECT_EQ(w.free_slots(), 1) << w.id();
}

TEST_F(JobManagerTest, MergesTheRanksStepReportsIntoOneEvent) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  const std::string id = jobs_.Submit(Devices(2), kOwner)->id();
  auto report = [&](const std::string& worker, int rank, double comm) {
    v1::TrainerEvents events;
    events.set_job_id(id);
    v1::JobEvent* event = events.add_events();
    event->set_rank(rank);
    event->set_rank_sequence(1);
    v1::StepMetrics* step = event->mutable_step();
    step->set_step(1);
    step->set_rank(rank);
    step->set_loss(0.5);
    step->set_comm_seconds(comm);
    step->set_tensor_peak_bytes(1000 + rank);
    jobs_.RecordEvents(worker, events);
  };
  const int64_t before = Log(jobs_, id)->last_sequence();
  report("w2", 1, 0.2);
  EXPECT_EQ(Log(jobs_, id)->last_sequence(), before) << "waits for every rank";
  report("w1", 0, 0.1);
  ASSERT_EQ(Log(jobs_, id)->last_sequence(), before + 1);
  v1::JobEvent merged;
  ASSERT_TRUE(Read(*Log(jobs_, id), before, &merged));
  ASSERT_EQ(merged.step().ranks_size(), 2);
  EXPECT_EQ(merged.step().ranks(0).worker_id(), "w1");
  EXPECT_EQ(merged.step().ranks(1).worker_id(), "w2");
  EXPECT_DOUBLE_EQ(merged.step().ranks(1).comm_seconds(), 0.2);
  EXPECT_EQ(merged.step().rank(), 0);
  EXPECT_EQ(merged.step().ranks(1).tensor_peak_bytes(), 1001);
  EXPECT_EQ(merged.step().ranks(1).rank_sequence(), 1);
  report("w2", 1, 0.2);  // resent after a reconnect
  EXPECT_EQ(Log(jobs_, id)->last_sequence(), before + 1) << "known by its number";
  // Memory is exported per rank.
  const std::string exposition = registry_.Render();
  EXPECT_NE(exposition.find("accumulus_job_tensor_peak_bytes{job_id=\"" + id +
                            "\",rank=\"0\",worker_id=\"w1\"} 1000"),
            std::string::npos)
      << exposition;
  EXPECT_NE(exposition.find("accumulus_job_tensor_peak_bytes{job_id=\"" + id +
                            "\",rank=\"1\",worker_id=\"w2\"} 1001"),
            std::string::npos);
  const v1::AssignmentStatus failed =
      Ended(id, v1::JOB_STATE_FAILED, "rank 1 on worker w2: killed by signal 9");
  jobs_.RecordStatus("w2", failed);
  EXPECT_EQ(registry_.Render().find("job_id=\"" + id + "\""), std::string::npos)
      << "a job's series end with it";
}

TEST_F(JobManagerTest, AFailedAttemptRestartsOnceItsRanksHaveStopped) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  v1::JobSpec spec = Devices(2);
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  EXPECT_EQ(jobs_.Get(id)->attempt(), 1);

  jobs_.RecordStatus("w2", Ended(id, v1::JOB_STATE_FAILED, "rank 1 on worker w2: killed"));
  EXPECT_EQ(State(id), v1::JOB_STATE_RESTARTING);
  ASSERT_TRUE(a.back().has_cancel()) << "rank 0 is stopped";
  // Until rank 0 has stopped, its slot is held and nothing is placed.
  const size_t assigned_before = a.size() + b.size();
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_CANCELLED, "stopped"));
  const v1::Job job = *jobs_.Get(id);
  EXPECT_EQ(job.attempt(), 2);
  EXPECT_EQ(job.state(), v1::JOB_STATE_STARTING) << "placed again on the free slots";
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).number(), 1);
  EXPECT_EQ(job.attempts(0).reason(), "rank 1 on worker w2: killed");
  EXPECT_EQ(a.size() + b.size(), assigned_before + 2) << "one assignment per worker";
  EXPECT_TRUE(a.back().has_assign());
  EXPECT_TRUE(b.back().has_assign());

  // The second attempt fails too: no restarts left.
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_FAILED, "rank 0 on worker w1: killed"));
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED);
  EXPECT_EQ(jobs_.Get(id)->reason(), "rank 0 on worker w1: killed");
}

TEST_F(JobManagerTest, APermanentFailureIsNotRestarted) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(3);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_FAILED, "data.path: no such file", true,
                                 v1::FAILURE_CLASS_BAD_DATA));
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED);
  EXPECT_EQ(jobs_.Get(id)->failure_class(), v1::FAILURE_CLASS_BAD_DATA) << "the worker's class";
  EXPECT_EQ(jobs_.Get(id)->attempts_size(), 0);
  EXPECT_NE(
      registry_.Render().find("accumulus_attempts_failed_total{failure_class=\"bad_data\"} 1"),
      std::string::npos)
      << registry_.Render();
}

TEST_F(JobManagerTest, ALostWorkersJobRestartsElsewhere) {
  std::vector<v1::ControllerMessage> a, b;
  const uint64_t session = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  ASSERT_EQ(jobs_.Get(id)->worker_id(), "w1");
  jobs_.WorkerGone("w1", session, "heartbeat lost", kFenceOver);
  EXPECT_EQ(State(id), v1::JOB_STATE_QUEUED) << "nothing left to stop: queued at once";
  EXPECT_EQ(jobs_.Get(id)->attempt(), 2);
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  EXPECT_EQ(State(id), v1::JOB_STATE_STARTING);
  EXPECT_EQ(jobs_.Get(id)->worker_id(), "w2");
  ASSERT_EQ(jobs_.Get(id)->attempts_size(), 1);
  EXPECT_EQ(jobs_.Get(id)->attempts(0).reason(), "worker w1 lost: heartbeat lost");
  EXPECT_EQ(jobs_.Get(id)->attempts(0).failure_class(), v1::FAILURE_CLASS_WORKER_LOST);
  EXPECT_EQ(jobs_.Get(id)->failure_class(), v1::FAILURE_CLASS_UNSPECIFIED)
      << "running again: the job itself has not failed";
}

TEST_F(JobManagerTest, CancellingARestartingJobEndsItCancelled) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  v1::JobSpec spec = Devices(2);
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  jobs_.RecordStatus("w2", Ended(id, v1::JOB_STATE_FAILED, "rank 1: killed"));
  ASSERT_EQ(State(id), v1::JOB_STATE_RESTARTING);
  ASSERT_TRUE(jobs_.Cancel(id, "").ok());
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_CANCELLED, "stopped"));
  EXPECT_EQ(State(id), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_.Get(id)->failure_class(), v1::FAILURE_CLASS_CANCELLED);
  for (const auto& w : jobs_.Workers()) EXPECT_EQ(w.free_slots(), 1) << w.id();
  // One attempt, ended once: by its rank's failure, not again by the cancel.
  const std::string exposition = registry_.Render();
  EXPECT_NE(exposition.find("accumulus_attempts_failed_total{failure_class=\"unspecified\"} 1"),
            std::string::npos)
      << exposition;
  EXPECT_NE(exposition.find("accumulus_attempts_failed_total{failure_class=\"cancelled\"} 0"),
            std::string::npos)
      << exposition;
}

TEST_F(JobManagerTest, AWorkerBackWithARankOfAMovedJobIsToldToStopIt) {
  std::vector<v1::ControllerMessage> a, b;
  const uint64_t session = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  jobs_.WorkerGone("w1", session, "link dropped", kFenceOver);
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  ASSERT_EQ(jobs_.Get(id)->worker_id(), "w2") << "attempt 2 runs on w2";

  // w1 was only cut off: its trainer of attempt 1 still runs.
  v1::Register back = Worker("w1", 1);
  back.add_running_job_ids(id);
  jobs_.WorkerConnected(back, Inbox(&a));
  ASSERT_TRUE(a.back().has_cancel());
  EXPECT_EQ(a.back().cancel().job_id(), id);
  EXPECT_EQ(State(id), v1::JOB_STATE_STARTING) << "attempt 2 is untouched";

  // Attempt 2 is lost too; w1 is free but still stopping attempt 1 of the
  // same job, so attempt 3 waits for it (a worker runs one attempt of a job).
  jobs_.RecordStatus("w2", Ended(id, v1::JOB_STATE_FAILED, "rank 0 on worker w2: killed"));
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED) << "max_restarts 1: no attempt 3";
}

// A worker that shuts down (a node drain) stops its ranks and says so: the
// job moves without spending a restart, however many it has (here none), and
// a real failure after that still spends one.
TEST_F(JobManagerTest, AJobItsWorkerShutDownUnderMovesWithoutSpendingARestart) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();  // max_restarts 0
  v1::AssignmentStatus drained =
      Ended(id, v1::JOB_STATE_FAILED, "worker w1 is shutting down; stopped after step 9");
  drained.set_failure_class(v1::FAILURE_CLASS_PREEMPTED);
  jobs_.RecordStatus("w1", drained);
  ASSERT_EQ(State(id), v1::JOB_STATE_QUEUED) << "attempt 2 waits for devices";
  v1::Job job = *jobs_.Get(id);
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_PREEMPTED);
  EXPECT_EQ(job.attempt(), 2);

  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  EXPECT_EQ(jobs_.Get(id)->worker_id(), "w2");
  jobs_.RecordStatus("w2", Ended(id, v1::JOB_STATE_FAILED, "rank 0 on worker w2: killed"));
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED) << "max_restarts 0: a failure is final";
}

// A worker whose lease lapsed (the controller was down or cut off) stopped
// the job's trainers: the job restarts at no cost — on the same worker,
// which is not shutting down — and a real failure after that still spends
// a restart.
TEST_F(JobManagerTest, AnAttemptStoppedByALapsedLeaseRestartsWithoutSpendingARestart) {
  std::vector<v1::ControllerMessage> a;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();  // max_restarts 0
  v1::AssignmentStatus lapsed =
      Ended(id, v1::JOB_STATE_FAILED, "worker lease lapsed: no heartbeat echo from the controller");
  lapsed.set_failure_class(v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE);
  lapsed.set_attempt(1);
  jobs_.RecordStatus("w1", lapsed);
  ASSERT_EQ(State(id), v1::JOB_STATE_STARTING) << "attempt 2 placed at once";
  ASSERT_TRUE(a.back().has_assign());
  EXPECT_EQ(a.back().assign().attempt(), 2) << "on w1 again";
  v1::Job job = *jobs_.Get(id);
  ASSERT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE);
  EXPECT_EQ(RestartsUsed(job), 0);

  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_FAILED, "rank 0 on worker w1: killed"));
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED) << "max_restarts 0: a failure is final";
}

TEST_F(JobManagerTest, AResumeGivesTheJobItsRestartsAfresh) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  const auto killed = [&](int attempt) {
    v1::AssignmentStatus status = Ended(id, v1::JOB_STATE_FAILED, "rank 0: killed");
    status.set_attempt(attempt);
    jobs_.RecordStatus("w1", status);
  };
  killed(1);
  ASSERT_EQ(jobs_.Get(id)->attempt(), 2) << "restart 1 of 1";
  killed(2);
  ASSERT_EQ(State(id), v1::JOB_STATE_FAILED) << "no restart left";

  // Resumed: a fault is survived again, once.
  ASSERT_TRUE(jobs_.Resume(id).ok());
  v1::Job job = *jobs_.Get(id);
  ASSERT_EQ(job.attempt(), 3);
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_FALSE(job.attempts(0).resumed_by_request());
  EXPECT_TRUE(job.attempts(1).resumed_by_request());
  EXPECT_EQ(RestartsUsed(job), 0);
  killed(3);
  EXPECT_EQ(jobs_.Get(id)->attempt(), 4) << "restarted after the resume";
  EXPECT_EQ(RestartsUsed(*jobs_.Get(id)), 1);
  killed(4);
  EXPECT_EQ(State(id), v1::JOB_STATE_FAILED);

  // A pause (cancel, then resume) spends none either.
  ASSERT_TRUE(jobs_.Resume(id).ok());
  ASSERT_TRUE(jobs_.Cancel(id, "pause").ok());
  v1::AssignmentStatus stopped = Ended(id, v1::JOB_STATE_CANCELLED, "stopped");
  stopped.set_attempt(5);
  jobs_.RecordStatus("w1", stopped);
  ASSERT_EQ(State(id), v1::JOB_STATE_CANCELLED);
  ASSERT_TRUE(jobs_.Resume(id).ok());
  killed(6);
  EXPECT_EQ(jobs_.Get(id)->attempt(), 7) << "the cancelled attempt spent no restart";
}

// A shutdown while the job is being cancelled does not move it.
TEST_F(JobManagerTest, AShutdownDuringACancelStillEndsTheJobCancelled) {
  std::vector<v1::ControllerMessage> a;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
  ASSERT_TRUE(jobs_.Cancel(id, "by request").ok());
  v1::AssignmentStatus drained = Ended(id, v1::JOB_STATE_FAILED, "worker w1 is shutting down");
  drained.set_failure_class(v1::FAILURE_CLASS_PREEMPTED);
  jobs_.RecordStatus("w1", drained);
  EXPECT_EQ(State(id), v1::JOB_STATE_CANCELLED);
}

// The controller stopping closes every worker's link: that changes no job
// (its trainers keep training; the next controller takes it up).
TEST_F(JobManagerTest, LinksThatEndDuringAShutdownLeaveTheJobsAsTheyAre) {
  std::vector<v1::ControllerMessage> a;
  const uint64_t session = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  jobs_.BeginShutdown();
  jobs_.WorkerGone("w1", session, "the controller is shutting down", kFenceOver);
  const v1::Job job = *jobs_.Get(id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_STARTING);
  EXPECT_EQ(job.attempt(), 1);
  EXPECT_EQ(job.worker_id(), "w1");
}

TEST_F(JobManagerTest, ARestartWaitsForAWorkerStillStoppingTheJobsOldAttempt) {
  std::vector<v1::ControllerMessage> a;
  const uint64_t session = jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  v1::JobSpec spec = SmallSpec();
  spec.set_max_restarts(1);
  const std::string id = jobs_.Submit(spec, kOwner)->id();
  jobs_.WorkerGone("w1", session, "link dropped", kFenceOver);
  ASSERT_EQ(State(id), v1::JOB_STATE_QUEUED) << "attempt 2 waits for devices";
  // w1 comes back, still running attempt 1: told to stop it, and attempt 2
  // is not placed there until it has.
  v1::Register back = Worker("w1", 1);
  back.add_running_job_ids(id);
  jobs_.WorkerConnected(back, Inbox(&a));
  ASSERT_TRUE(a.back().has_cancel());
  EXPECT_EQ(State(id), v1::JOB_STATE_QUEUED);
  jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_CANCELLED, "stopped"));
  EXPECT_EQ(State(id), v1::JOB_STATE_STARTING);
  ASSERT_TRUE(a.back().has_assign());
  EXPECT_EQ(jobs_.Get(id)->attempt(), 2);
}

v1::TrainerEvents StepReport(const std::string& job_id, int64_t step) {
  v1::TrainerEvents events;
  events.set_job_id(job_id);
  v1::JobEvent* event = events.add_events();
  event->mutable_step()->set_step(step);
  event->set_rank_sequence(step);  // the trainer's only events
  return events;
}

// Cardinality: 200 short jobs through the whole lifecycle, each with a step;
// their series stay for the retention, then go, however many ran.
TEST_F(JobManagerTest, AfterManyShortJobsOnlyTheRetainedJobsHaveSeries) {
  const auto series_of_jobs = [this] {
    const std::string text = registry_.Render();
    std::set<std::string> ids;
    const std::regex id(R"(job_id="([^"]+)\")");
    for (std::sregex_iterator it(text.begin(), text.end(), id), end; it != end; ++it) {
      ids.insert((*it)[1]);
    }
    return ids.size();
  };
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const auto run_jobs = [this](int count) {
    for (int i = 0; i < count; ++i) {
      const std::string id = jobs_.Submit(SmallSpec(), kOwner)->id();
      jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_RUNNING, ""));
      jobs_.RecordEvents("w1", StepReport(id, 1));
      jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_SUCCEEDED, ""));
      ASSERT_EQ(State(id), v1::JOB_STATE_SUCCEEDED);
    }
  };
  jobs_.set_finished_job_metrics_retention(std::chrono::hours(1));
  run_jobs(100);
  EXPECT_EQ(series_of_jobs(), 100u) << "within the retention: each finished job's last values";
  jobs_.set_finished_job_metrics_retention(std::chrono::milliseconds(0));
  run_jobs(100);
  jobs_.Expire();
  EXPECT_EQ(series_of_jobs(), 100u) << "the first 100 still within their hour, the rest gone";
  EXPECT_NE(registry_.Render().find("accumulus_jobs_finished_total{state=\"succeeded\"} 200"),
            std::string::npos);
}

// Submits are bounded per owner and minute: a refused one makes no job,
// and the retry of a request that made one is no new submit.
TEST_F(JobManagerTest, SubmitsAreBoundedPerOwnerAndMinute) {
  jobs_.set_max_submits_per_minute(2);
  ASSERT_TRUE(jobs_.Submit(SmallSpec(), "alice", "request-1").ok());
  ASSERT_TRUE(jobs_.Submit(SmallSpec(), "alice", "request-2").ok());
  StatusOr<v1::Job> refused = jobs_.Submit(SmallSpec(), "alice", "request-3");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find(
                "alice submits faster than the limit for one owner, 2 jobs a minute "
                "(--max-submits-per-minute-per-owner): nothing was submitted"),
            std::string::npos)
      << refused.status().message();
  const StatusOr<v1::Job> retried = jobs_.Submit(SmallSpec(), "alice", "request-2");
  ASSERT_TRUE(retried.ok()) << "a retry is answered: " << retried.status().ToString();
  EXPECT_TRUE(jobs_.Submit(SmallSpec(), "bob").ok()) << "another owner may";
  EXPECT_EQ(jobs_.List().size(), 3u) << "nothing was added for the refusal or the retry";
}

// A controller restart: a new JobManager on the same store.
// Unfinished jobs are bounded per owner (2 here) and in all (3): a submit
// or a resume beyond is refused, naming the limit and its flag, and changes
// nothing; a job that finishes makes room.
TEST_F(JobManagerTest, UnfinishedJobsAreBoundedPerOwnerAndInAll) {
  jobs_.set_max_active_jobs(3, 2);
  const std::string a1 = jobs_.Submit(SmallSpec(), "alice")->id();  // queued: no worker
  const std::string a2 = jobs_.Submit(SmallSpec(), "alice")->id();
  StatusOr<v1::Job> refused = jobs_.Submit(SmallSpec(), "alice");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "alice already has 2 unfinished jobs, the limit for one owner "
            "(--max-active-jobs-per-owner): nothing was submitted; wait for some to finish, or "
            "cancel some");
  ASSERT_TRUE(jobs_.Submit(SmallSpec(), "bob").ok()) << "another owner may";
  refused = jobs_.Submit(SmallSpec(), "carol");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("already holds 3 unfinished jobs, its limit "
                                            "(--max-active-jobs)"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(jobs_.List().size(), 3u) << "nothing was added";

  ASSERT_TRUE(jobs_.Cancel(a1, "").ok());
  EXPECT_EQ(State(a1), v1::JOB_STATE_CANCELLED);
  const StatusOr<v1::Job> a3 = jobs_.Submit(SmallSpec(), "alice");
  ASSERT_TRUE(a3.ok()) << "a finished job made room: " << a3.status().ToString();
  const StatusOr<v1::Job> resumed = jobs_.Resume(a1);
  ASSERT_FALSE(resumed.ok()) << "alice is at her limit again";
  EXPECT_NE(resumed.status().message().find("nothing was resumed"), std::string::npos)
      << resumed.status().message();
  EXPECT_EQ(State(a1), v1::JOB_STATE_CANCELLED) << "the refused resume changed nothing";
  EXPECT_EQ(jobs_.Get(a1)->attempts_size(), 0);

  ASSERT_TRUE(jobs_.Cancel(a2, "").ok());
  ASSERT_TRUE(jobs_.Resume(a1).ok()) << "room again";
  EXPECT_EQ(State(a1), v1::JOB_STATE_QUEUED);
}

class RecoveryTest : public JobManagerTest {
 protected:
  std::unique_ptr<JobStore> OpenStore() {
    auto store = JobStore::Open(temp_.path() + "/state.db");
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return std::move(*store);
  }
  const testing::TempDir temp_;
};

// A job's log keeps its newest events in memory, the rest in the store,
// before and after a restart: a replay from the first event gets every one,
// in order, and a resent report is still known for one.
TEST_F(RecoveryTest, ALogKeepsOnlyItsNewestEventsInMemoryAndReadsTheRestFromTheStore) {
  constexpr size_t kKeep = 8;
  constexpr int64_t kSteps = 100;
  std::string id;
  int64_t last_sequence = 0;
  {
    auto store = OpenStore();
    auto archive = EventArchive::Open(temp_.path() + "/state.db");
    ASSERT_TRUE(archive.ok()) << archive.status().ToString();
    JobManager before(&metrics_, &clock_, store.get(), archive->get(), kKeep);
    std::vector<v1::ControllerMessage> inbox;
    before.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
    id = before.Submit(SmallSpec(), kOwner)->id();
    before.RecordStatus("w1", Ended(id, v1::JOB_STATE_RUNNING, ""));
    for (int64_t step = 1; step <= kSteps; ++step) before.RecordEvents("w1", StepReport(id, step));
    const std::shared_ptr<EventLog> log = Log(before, id);
    last_sequence = log->last_sequence();
    EXPECT_GT(last_sequence, kSteps);
    EXPECT_EQ(log->events_in_memory(), kKeep);
    v1::JobEvent e;
    for (int64_t after = 0; after < last_sequence; ++after) {
      ASSERT_TRUE(Read(*log, after, &e)) << after;
      ASSERT_EQ(e.sequence(), after + 1);
    }
  }  // the controller dies

  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  auto archive = EventArchive::Open(temp_.path() + "/state.db");
  ASSERT_TRUE(archive.ok());
  JobManager after(&metrics, &clock_, store.get(), archive->get(), kKeep);
  ASSERT_TRUE(after.Recover(std::chrono::seconds(60)).ok());
  const std::shared_ptr<EventLog> log = Log(after, id);
  EXPECT_EQ(log->last_sequence(), last_sequence);
  EXPECT_EQ(log->events_in_memory(), kKeep) << "recovered: only the newest are loaded";
  std::deque<v1::JobEvent> all;
  for (int64_t after = 0; after < last_sequence;) {
    ASSERT_TRUE(log->ReadAfter(after, 1000, &all).ok());
    ASSERT_EQ(all.back().sequence(), static_cast<int64_t>(all.size()));
    after = all.back().sequence();
  }
  EXPECT_EQ(static_cast<int64_t>(all.size()), last_sequence);
  EXPECT_EQ(all.front().sequence(), 1);

  // Step 3's report again (a worker resending after the restart): known,
  // though the log no longer holds it in memory.
  std::vector<v1::ControllerMessage> inbox;
  v1::Register back = Worker("w1", 1);
  back.add_running_job_ids(id);
  after.WorkerConnected(back, Inbox(&inbox));
  after.RecordEvents("w1", StepReport(id, 3));
  EXPECT_EQ(Log(after, id)->last_sequence(), last_sequence) << "a duplicate is not recorded";
}

TEST_F(RecoveryTest, JobsAndTheirEventsSurviveAndWorkersClaimTheirRanks) {
  std::string running, queued;
  int64_t last_sequence = 0;
  {
    auto store = OpenStore();
    JobManager before(&metrics_, &clock_, store.get());
    std::vector<v1::ControllerMessage> inbox;
    before.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
    running = before.Submit(SmallSpec(), kOwner)->id();
    queued = before.Submit(SmallSpec(), kOwner)->id();
    before.RecordStatus("w1", Ended(running, v1::JOB_STATE_RUNNING, ""));
    before.RecordEvents("w1", StepReport(running, 1));
    last_sequence = Log(before, running)->last_sequence();
  }  // the controller dies

  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  JobManager after(&metrics, &clock_, store.get());
  ASSERT_TRUE(after.Recover(std::chrono::seconds(60)).ok());
  EXPECT_EQ(after.Get(running)->state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(after.Get(running)->steps_done(), 1);
  EXPECT_EQ(after.Get(queued)->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(after.Get(queued)->owner(), kOwner) << "the owner is part of the durable job";
  EXPECT_EQ(Log(after, running)->last_sequence(), last_sequence);
  const std::string next = after.Submit(SmallSpec(), kOwner)->id();
  EXPECT_NE(next, running);
  EXPECT_NE(next, queued);

  // The worker comes back still running its job: it keeps the slot, so the
  // queued job still waits.
  std::vector<v1::ControllerMessage> inbox;
  v1::Register back = Worker("w1", 1);
  back.add_running_job_ids(running);
  after.WorkerConnected(back, Inbox(&inbox));
  EXPECT_TRUE(inbox.empty()) << "nothing to assign, nothing to cancel";
  // It resends what it sent last; the step already recorded is not doubled.
  after.RecordEvents("w1", StepReport(running, 1));
  after.RecordEvents("w1", StepReport(running, 2));
  EXPECT_EQ(Log(after, running)->last_sequence(), last_sequence + 1);
  after.RecordStatus("w1", Ended(running, v1::JOB_STATE_SUCCEEDED, ""));
  EXPECT_EQ(after.Get(running)->state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_FALSE(inbox.empty());
  EXPECT_EQ(inbox.back().assign().job_id(), queued);
}

// The unfinished jobs read back count against the limits: a restart does
// not reset them, and a finished job read back takes no place.
TEST_F(RecoveryTest, TheUnfinishedJobsReadBackCountAgainstTheLimits) {
  {
    auto store = OpenStore();
    JobManager before(&metrics_, &clock_, store.get());
    ASSERT_TRUE(before.Submit(SmallSpec(), "alice").ok());
    const std::string cancelled = before.Submit(SmallSpec(), "alice")->id();
    ASSERT_TRUE(before.Cancel(cancelled, "").ok());
    ASSERT_TRUE(before.Submit(SmallSpec(), "alice").ok());
    before.Flush();
  }
  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  JobManager after(&metrics, &clock_, store.get());
  after.set_max_active_jobs(0, 2);
  ASSERT_TRUE(after.Recover(std::chrono::seconds(60)).ok());
  const StatusOr<v1::Job> refused = after.Submit(SmallSpec(), "alice");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("alice already has 2 unfinished jobs"),
            std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(after.Submit(SmallSpec(), "bob").ok());
}

TEST_F(RecoveryTest, APageTokenGoesOnWhereItStoppedAfterARestart) {
  std::vector<std::string> ids;
  std::string token;
  {
    auto store = OpenStore();
    JobManager before(&metrics_, &clock_, store.get());
    for (int i = 0; i < 5; ++i) ids.push_back(before.Submit(SmallSpec(), kOwner)->id());
    v1::ListJobsRequest request;
    request.set_page_size(2);
    token = before.ListPage(request)->next_page_token();
    before.Flush();
  }
  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  JobManager after(&metrics, &clock_, store.get());
  ASSERT_TRUE(after.Recover(std::chrono::seconds(60)).ok());
  v1::ListJobsRequest request;
  request.set_page_token(token);
  const StatusOr<v1::ListJobsResponse> rest = after.ListPage(request);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  std::vector<std::string> listed;
  for (const v1::JobSummary& job : rest->jobs()) listed.push_back(job.id());
  EXPECT_EQ(listed, std::vector<std::string>(ids.begin() + 2, ids.end()));
  const std::string newer = after.Submit(SmallSpec(), kOwner)->id();
  EXPECT_EQ(after.List().back().id(), newer) << "a job submitted after the restart lists last";
}

TEST_F(RecoveryTest, ARetryAfterARestartStillFindsItsJob) {
  std::string id;
  {
    auto store = OpenStore();
    JobManager before(&metrics_, &clock_, store.get());
    id = before.Submit(SmallSpec(), "alice", "req-7")->id();
  }  // the controller dies before the client saw the reply

  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  JobManager after(&metrics, &clock_, store.get());
  ASSERT_TRUE(after.Recover(std::chrono::seconds(60)).ok());
  const StatusOr<v1::Job> retry = after.Submit(SmallSpec(), "alice", "req-7");
  ASSERT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_EQ(retry->id(), id);
  EXPECT_EQ(after.List().size(), 1u);
}

// The store's writer shows an event to watchers only once it is in the
// database: a watcher told of events finds each one it can see there, read
// back by a second connection at that very moment.
TEST_F(RecoveryTest, AWatcherIsToldOfAnEventOnlyOnceItIsDurable) {
  auto store = OpenStore();
  JobManager jobs(&metrics_, &clock_, store.get());
  std::vector<v1::ControllerMessage> inbox;
  jobs.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs.Submit(SmallSpec(), kOwner)->id();

  class Checker final : public EventLog::Listener {
   public:
    Checker(std::string path, std::string id, std::shared_ptr<EventLog> log)
        : path_(std::move(path)), id_(std::move(id)), log_(std::move(log)) {}
    void OnEventsAvailable() override {
      const int64_t visible = log_->last_sequence();
      int64_t stored = 0;
      auto reader = JobStore::Open(path_);
      ASSERT_TRUE(reader.ok());
      auto jobs = (*reader)->Load();
      ASSERT_TRUE(jobs.ok());
      for (const auto& j : *jobs) {
        if (j.job.id() == id_ && !j.events.empty()) stored = j.events.back().sequence();
      }
      MutexLock lock(&mutex_);
      seen_.push_back({visible, stored});
    }
    std::vector<std::pair<int64_t, int64_t>> seen() {
      MutexLock lock(&mutex_);
      return seen_;
    }

   private:
    const std::string path_, id_;
    const std::shared_ptr<EventLog> log_;
    Mutex mutex_;
    std::vector<std::pair<int64_t, int64_t>> seen_ GUARDED_BY(mutex_);
  };
  const std::shared_ptr<EventLog> log = Log(jobs, id);
  auto checker = std::make_shared<Checker>(store->path(), id, log);
  log->Subscribe(checker);
  for (int64_t step = 1; step <= 5; ++step) jobs.RecordEvents("w1", StepReport(id, step));
  jobs.Flush();
  log->Unsubscribe(checker.get());
  const auto seen = checker->seen();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().first, log->last_sequence()) << "told of the last one too";
  for (const auto& [visible, stored] : seen) {
    EXPECT_LE(visible, stored) << "a watcher could read an event the store did not have";
  }
}

// A worker message is acknowledged (the completion RecordMessage runs on the
// writer thread) only once every event it carried is in the database and
// shown to watchers: the worker may then forget it.
TEST_F(RecoveryTest, AWorkerMessageCompletesOnlyOnceItsEventsAreDurable) {
  auto store = OpenStore();
  JobManager jobs(&metrics_, &clock_, store.get());
  std::vector<v1::ControllerMessage> inbox;
  jobs.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  const std::string id = jobs.Submit(SmallSpec(), kOwner)->id();
  jobs.RecordStatus("w1", Ended(id, v1::JOB_STATE_RUNNING, ""));

  v1::WorkerMessage message;
  message.set_sequence(7);
  *message.mutable_events() = StepReport(id, 1);
  *message.mutable_events()->add_events() = StepReport(id, 2).events(0);
  Mutex mutex;
  int64_t stored_steps = -1, visible = -1;
  const std::shared_ptr<EventLog> log = Log(jobs, id);
  jobs.RecordMessage("w1", message, /*new_status=*/true, [&](const Status& durable) {
    EXPECT_TRUE(durable.ok()) << durable.ToString();
    auto reader = JobStore::Open(store->path());
    ASSERT_TRUE(reader.ok());
    auto stored = (*reader)->Load();
    ASSERT_TRUE(stored.ok());
    int64_t steps = 0;
    for (const auto& j : *stored) {
      for (const auto& e : j.events) steps += e.has_step() ? 1 : 0;
    }
    MutexLock lock(&mutex);
    stored_steps = steps;
    visible = log->last_sequence();
  });
  jobs.Flush();
  MutexLock lock(&mutex);
  EXPECT_EQ(stored_steps, 2) << "both steps of the message were durable when it completed";
  EXPECT_EQ(visible, log->last_sequence()) << "and shown to watchers";
  EXPECT_EQ(jobs.Get(id)->steps_done(), 2);
}

// Jobs are restored in the order they were submitted; retention still
// keeps the one that finished last.
TEST_F(RecoveryTest, RetentionAfterARestartKeepsTheJobsThatFinishedLast) {
  std::string long_job, short_job;
  {
    auto store = OpenStore();
    JobManager before(&metrics_, &clock_, store.get());
    std::vector<v1::ControllerMessage> inbox;
    before.WorkerConnected(Worker("w1", 2), Inbox(&inbox));
    long_job = before.Submit(SmallSpec(), kOwner)->id();
    short_job = before.Submit(SmallSpec(), kOwner)->id();
    before.RecordStatus("w1", Ended(short_job, v1::JOB_STATE_SUCCEEDED, ""));
    before.RecordStatus("w1", Ended(long_job, v1::JOB_STATE_SUCCEEDED, ""));
    before.Flush();
  }
  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  JobManager after(&metrics, &clock_, store.get());
  ASSERT_TRUE(after.Recover(std::chrono::milliseconds(0)).ok());
  after.set_keep_finished(1);
  after.Expire();
  EXPECT_TRUE(after.Get(long_job).ok()) << "submitted first, finished last";
  EXPECT_FALSE(after.Get(short_job).ok());
}

TEST_F(RecoveryTest, RanksOnAWorkerThatNeverReturnsAreLost) {
  std::string id;
  {
    auto store = OpenStore();
    JobManager before(&metrics_, &clock_, store.get());
    std::vector<v1::ControllerMessage> inbox;
    before.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
    id = before.Submit(SmallSpec(), kOwner)->id();
  }
  metrics::Registry registry;
  ControllerMetrics metrics(&registry);
  auto store = OpenStore();
  JobManager after(&metrics, &clock_, store.get());
  ASSERT_TRUE(after.Recover(std::chrono::milliseconds(0)).ok());
  after.Expire();
  EXPECT_EQ(after.Get(id)->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(after.Get(id)->reason(), "worker w1 did not reconnect after the controller restarted");
}

TEST_F(JobManagerTest, OnlyTheNewestFinishedJobsAreKept) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  jobs_.set_keep_finished(2);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(jobs_.Submit(SmallSpec(), kOwner)->id());
    jobs_.RecordStatus("w1", Ended(ids.back(), v1::JOB_STATE_SUCCEEDED, ""));
  }
  jobs_.Expire();
  EXPECT_FALSE(jobs_.Get(ids[0]).ok());
  EXPECT_FALSE(jobs_.Get(ids[1]).ok());
  EXPECT_TRUE(jobs_.Get(ids[3]).ok());
  EXPECT_EQ(jobs_.List().size(), 2u);
}

// One owner's stream of short jobs pushes out its own finished jobs, not
// another owner's.
TEST_F(JobManagerTest, AnOwnersChurnPrunesItsOwnFinishedJobsFirst) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  jobs_.set_keep_finished(3);
  const auto finish = [&](const std::string& owner) {
    const std::string id = jobs_.Submit(SmallSpec(), owner)->id();
    jobs_.RecordStatus("w1", Ended(id, v1::JOB_STATE_SUCCEEDED, ""));
    return id;
  };
  const std::string bobs = finish("bob");
  std::vector<std::string> alices;
  for (int i = 0; i < 5; ++i) alices.push_back(finish("alice"));
  jobs_.Expire();
  EXPECT_TRUE(jobs_.Get(bobs).ok()) << "the oldest, but bob holds one";
  EXPECT_FALSE(jobs_.Get(alices[2]).ok());
  EXPECT_TRUE(jobs_.Get(alices[3]).ok());
  EXPECT_TRUE(jobs_.Get(alices[4]).ok());
  EXPECT_EQ(jobs_.List().size(), 3u);
}

// A data-parallel job that failed on one rank is finished while its other
// rank still stops: retention must not drop it (and with it the slot that
// rank holds), and losing that worker afterwards frees the slot.
TEST_F(JobManagerTest, AFinishedJobWhoseRanksStillStopKeepsItsSlotsUntilTheyAreFreed) {
  std::vector<v1::ControllerMessage> a, b;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&a));
  const uint64_t w2 = jobs_.WorkerConnected(Worker("w2", 1), Inbox(&b));
  jobs_.set_keep_finished(1);
  const std::string gang = jobs_.Submit(Devices(2), kOwner)->id();
  ASSERT_EQ(State(gang), v1::JOB_STATE_STARTING);
  jobs_.RecordStatus("w1", Ended(gang, v1::JOB_STATE_FAILED, "rank 0 crashed"));
  ASSERT_EQ(State(gang), v1::JOB_STATE_FAILED);  // max_restarts 0
  // w1 is free again: two one-device jobs finish there, past the retention.
  for (int i = 0; i < 2; ++i) {
    const std::string small = jobs_.Submit(SmallSpec(), kOwner)->id();
    jobs_.RecordStatus("w1", Ended(small, v1::JOB_STATE_SUCCEEDED, ""));
  }
  jobs_.Expire();
  ASSERT_TRUE(jobs_.Get(gang).ok()) << "kept while its rank on w2 stops";

  jobs_.WorkerGone("w2", w2, "killed", kFenceOver);  // must not crash
  std::vector<v1::ControllerMessage> c;
  jobs_.WorkerConnected(Worker("w2", 1), Inbox(&c));
  const std::string next = jobs_.Submit(Devices(2), kOwner)->id();
  EXPECT_EQ(State(next), v1::JOB_STATE_STARTING)
      << "no slot stays held: " << jobs_.Get(next)->reason();
  jobs_.Expire();
  EXPECT_FALSE(jobs_.Get(gang).ok()) << "pruned once its slots were freed";
}

TEST_F(JobManagerTest, AnElasticJobTakesTheDevicesThatAreFreeAndKeepsTheGlobalBatch) {
  std::vector<v1::ControllerMessage> inbox;
  jobs_.WorkerConnected(Worker("w1", 1), Inbox(&inbox));
  v1::JobSpec spec = Devices(2);  // 8 × 2 × 2 = 32
  spec.set_min_devices(1);
  const v1::Job job = *jobs_.Submit(spec, kOwner);
  EXPECT_EQ(job.state(), v1::JOB_STATE_STARTING) << "one of 1..2 devices is enough";
  EXPECT_EQ(job.batch().devices(), 1);
  EXPECT_EQ(job.batch().global_batch(), 32);
  EXPECT_EQ(job.batch().accumulation_steps(), 4);
  ASSERT_EQ(inbox.size(), 1u);
  EXPECT_EQ(inbox[0].assign().world_size(), 1);
  EXPECT_EQ(inbox[0].assign().batch().accumulation_steps(), 4);
}

}  // namespace
}  // namespace accumulus::server
