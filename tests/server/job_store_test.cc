// The controller's SQLite store: jobs and their events come back as written,
// after a reopen too; damaged files give a clear error naming the file.
#include "server/job_store.h"

#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace accumulus::server {
namespace {

v1::Job JobIn(const std::string& id, v1::JobState state) {
  v1::Job job;
  job.set_id(id);
  job.set_state(state);
  job.set_steps_done(3);
  return job;
}

v1::JobEvent StepEvent(int64_t sequence, int64_t step) {
  v1::JobEvent e;
  e.set_sequence(sequence);
  e.mutable_step()->set_step(step);
  e.mutable_step()->set_loss(0.5 / static_cast<double>(step));
  return e;
}

class JobStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<JobStore> Open() {
    auto store = JobStore::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }

  const testing::TempDir temp_;
  const std::string path_ = temp_.path() + "/state.db";
};

TEST_F(JobStoreTest, JobsAndEventsComeBackAfterAReopen) {
  {
    auto store = Open();
    ASSERT_TRUE(store->Record(JobIn("job-zz", v1::JOB_STATE_QUEUED), {}).ok());
    for (int64_t s = 1; s <= 3; ++s) {
      const v1::JobEvent e = StepEvent(s, s);
      ASSERT_TRUE(store->Record(JobIn("job-aa", v1::JOB_STATE_RUNNING), {&e}).ok());
    }
    // A later change keeps a job's place.
    ASSERT_TRUE(store->Record(JobIn("job-zz", v1::JOB_STATE_QUEUED), {}).ok());
  }
  auto loaded = Open()->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0].job.id(), "job-zz") << "submission order, not text order";
  EXPECT_EQ((*loaded)[1].job.state(), v1::JOB_STATE_RUNNING);
  ASSERT_EQ((*loaded)[1].events.size(), 3u);
  EXPECT_EQ((*loaded)[1].events[2].step().step(), 3);
  EXPECT_DOUBLE_EQ((*loaded)[1].events[2].step().loss(), 0.5 / 3);
}

TEST_F(JobStoreTest, AnEventIsNeverStoredTwice) {
  auto store = Open();
  const v1::JobEvent e = StepEvent(1, 1);
  ASSERT_TRUE(store->Record(JobIn("job-1", v1::JOB_STATE_RUNNING), {&e}).ok());
  const Status again = store->Record(JobIn("job-1", v1::JOB_STATE_RUNNING), {&e});
  EXPECT_FALSE(again.ok());
  auto loaded = store->Load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)[0].events.size(), 1u) << "the failed transaction left nothing behind";
}

TEST_F(JobStoreTest, DeletingTakesExactlyTheNamedJobsAndTheirEvents) {
  auto store = Open();
  for (int i = 1; i <= 5; ++i) {
    const v1::JobEvent e = StepEvent(1, 1);
    const v1::JobState state = i == 2 ? v1::JOB_STATE_RUNNING : v1::JOB_STATE_SUCCEEDED;
    ASSERT_TRUE(store->Record(JobIn("job-" + std::to_string(i), state), {&e}).ok());
  }
  ASSERT_TRUE(store->Delete({"job-1", "job-3"}).ok());
  auto loaded = store->Load();
  ASSERT_TRUE(loaded.ok());
  std::vector<std::string> ids;
  for (const auto& j : *loaded) {
    ids.push_back(j.job.id());
    EXPECT_EQ(j.events.size(), 1u) << j.job.id();
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"job-2", "job-4", "job-5"}));
}

// A record as schema version 1 wrote it: the closed sets as strings at the
// same field numbers, a preempted attempt as a bool (field 5).
v1::Job Version1Job(const std::string& id) {
  v1::Job job;
  job.set_id(id);
  job.set_state(v1::JOB_STATE_RUNNING);
  auto old = [](google::protobuf::Message* m) {
    return m->GetReflection()->MutableUnknownFields(m);
  };
  old(job.mutable_spec()->mutable_model())->AddLengthDelimited(1, "cnn");   // kind
  old(job.mutable_spec()->mutable_model())->AddLengthDelimited(3, "none");  // norm
  old(job.mutable_spec()->mutable_optimizer())->AddLengthDelimited(1, "adamw");
  old(job.mutable_spec())->AddLengthDelimited(13, "per_microbatch_mean");  // normalization
  old(job.mutable_spec())->AddLengthDelimited(23, "");                     // precision: default
  old(job.mutable_spec()->mutable_lr_schedule())->AddLengthDelimited(1, "cosine");
  v1::Attempt* drained = job.add_attempts();
  drained->set_number(1);
  old(drained)->AddVarint(5, 1);
  v1::Attempt* failed = job.add_attempts();
  failed->set_number(2);
  old(failed)->AddVarint(5, 0);
  old(job.mutable_runtime())->AddLengthDelimited(15, "carry");     // partial_window
  old(job.mutable_runtime())->AddLengthDelimited(21, "measured");  // threads_source
  return job;
}

void SetSchemaVersion(const std::string& path, int version) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, ("PRAGMA user_version=" + std::to_string(version)).c_str(), nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

TEST_F(JobStoreTest, AVersion1StateIsUpgradedInPlaceWithNothingLost) {
  {
    auto store = Open();
    v1::JobEvent plan;
    plan.set_sequence(1);
    plan.GetReflection()
        ->MutableUnknownFields(plan.mutable_runtime())
        ->AddLengthDelimited(15, "drop");
    const v1::JobEvent step = StepEvent(2, 1);
    ASSERT_TRUE(store->Record(Version1Job("job-old"), {&plan, &step}).ok());
  }
  SetSchemaVersion(path_, 1);
  for (int reopen = 0; reopen < 2; ++reopen) {  // the second finds version 2
    auto loaded = Open()->Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    ASSERT_EQ(loaded->size(), 1u);
    const v1::Job& job = (*loaded)[0].job;
    EXPECT_EQ(job.spec().model().kind(), v1::MODEL_KIND_CNN);
    EXPECT_EQ(job.spec().model().norm(), v1::NORM_LAYER_NONE);
    EXPECT_EQ(job.spec().optimizer().kind(), v1::OPTIMIZER_KIND_ADAMW);
    EXPECT_EQ(job.spec().normalization(), v1::NORMALIZATION_PER_MICROBATCH_MEAN);
    EXPECT_EQ(job.spec().precision(), v1::PRECISION_UNSPECIFIED);
    EXPECT_EQ(job.spec().lr_schedule().kind(), v1::LR_SCHEDULE_KIND_COSINE);
    ASSERT_EQ(job.attempts_size(), 2);
    EXPECT_EQ(job.attempts(0).failure_class(), v1::FAILURE_CLASS_PREEMPTED);
    EXPECT_EQ(job.attempts(1).failure_class(), v1::FAILURE_CLASS_UNSPECIFIED);
    EXPECT_EQ(job.runtime().partial_window(), v1::PARTIAL_WINDOW_CARRY);
    EXPECT_EQ(job.runtime().threads_source(), v1::THREADS_SOURCE_MEASURED);
    EXPECT_EQ(
        job.spec().model().GetReflection()->GetUnknownFields(job.spec().model()).field_count(), 0)
        << "nothing of version 1 is left behind";
    ASSERT_EQ((*loaded)[0].events.size(), 2u);
    EXPECT_EQ((*loaded)[0].events[0].runtime().partial_window(), v1::PARTIAL_WINDOW_DROP);
    EXPECT_EQ((*loaded)[0].events[1].step().step(), 1);
  }
}

TEST_F(JobStoreTest, ANewerSchemaIsRefusedNamingBothVersions) {
  Open();
  SetSchemaVersion(path_, 7);
  auto store = JobStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(),
            "state database " + path_ + " has schema version 7; this controller reads version 2");
}

TEST_F(JobStoreTest, AGarbledFileIsAClearErrorNamingIt) {
  std::ofstream(path_) << std::string(8192, 'x');
  auto store = JobStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find(path_), std::string::npos) << store.status().message();
  EXPECT_NE(store.status().message().find("not a database"), std::string::npos)
      << store.status().message();
}

TEST_F(JobStoreTest, ATruncatedFileIsAClearErrorNotACrash) {
  {
    auto store = Open();
    for (int i = 1; i <= 200; ++i) {
      const v1::JobEvent e = StepEvent(1, 1);
      ASSERT_TRUE(
          store->Record(JobIn("job-" + std::to_string(i), v1::JOB_STATE_RUNNING), {&e}).ok());
    }
  }  // Closing the last connection moves the WAL into the main file.
  std::error_code ignored;
  std::filesystem::remove(path_ + "-wal", ignored);
  std::filesystem::remove(path_ + "-shm", ignored);
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) / 3);
  auto store = JobStore::Open(path_);
  Status status = store.ok() ? store->get()->Load().status() : store.status();
  ASSERT_FALSE(status.ok()) << "a third of the database cannot hold every job";
  EXPECT_NE(status.message().find(path_), std::string::npos) << status.message();
}

}  // namespace
}  // namespace accumulus::server
