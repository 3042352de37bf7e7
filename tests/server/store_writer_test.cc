// The store's writer thread: each batch's completion runs after its commit
// (the events are in the database by then), in submission order; Flush
// waits for every completion; a failed commit is counted and rolled back,
// and its completion still runs (the controller carries on in memory).
#include "server/store_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/mutex.h"
#include "server/job_store.h"
#include "tests/support/temp_dir.h"

namespace accumulus::server {
namespace {

StoreWriter::Change Events(int64_t first, int64_t last) {
  StoreWriter::Change change;
  change.job.set_id("job-1");
  change.job.set_steps_done(last);
  for (int64_t s = first; s <= last; ++s) {
    v1::JobEvent event;
    event.set_job_id("job-1");
    event.set_sequence(s);
    change.events.push_back(event);
  }
  return change;
}

// The newest event sequence stored for job-1, read by a second connection.
int64_t StoredThrough(const std::string& path) {
  auto store = JobStore::Open(path);
  if (!store.ok()) return -1;
  auto jobs = (*store)->Load();
  if (!jobs.ok() || jobs->empty() || jobs->front().events.empty()) return 0;
  return jobs->front().events.back().sequence();
}

class StoreWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = JobStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }

  const testing::TempDir temp_;
  const std::string path_ = temp_.path() + "/state.db";
  std::unique_ptr<JobStore> store_;
  metrics::Counter errors_;
  Mutex mutex_;
  std::vector<std::string> seen_ GUARDED_BY(mutex_);
};

TEST_F(StoreWriterTest, EachCompletionRunsAfterItsCommitInSubmissionOrder) {
  StoreWriter writer(store_.get(), &errors_);
  for (int64_t batch = 1; batch <= 3; ++batch) {
    const int64_t last = batch * 2;
    writer.Submit({Events(last - 1, last)}, {}, [this, last](std::vector<StoreWriter::Change>* c) {
      const int64_t stored = StoredThrough(path_);
      MutexLock lock(&mutex_);
      seen_.push_back("through " + std::to_string(c->back().events.back().sequence()) +
                      (stored >= last ? " stored" : " NOT stored"));
    });
  }
  writer.Flush();
  MutexLock lock(&mutex_);
  EXPECT_EQ(seen_,
            (std::vector<std::string>{"through 2 stored", "through 4 stored", "through 6 stored"}));
  EXPECT_EQ(errors_.Value(), 0);
}

TEST_F(StoreWriterTest, AFailedCommitIsCountedRolledBackAndItsCompletionStillRuns) {
  StoreWriter writer(store_.get(), &errors_);
  writer.Submit({Events(1, 2)}, {}, nullptr);
  writer.Flush();
  bool ran = false;
  // Sequence 2 again: the primary key refuses it, and the whole batch goes.
  writer.Submit({Events(2, 3)}, {}, [&ran](std::vector<StoreWriter::Change>*) { ran = true; });
  writer.Flush();
  EXPECT_TRUE(ran);
  EXPECT_EQ(errors_.Value(), 1);
  EXPECT_EQ(StoredThrough(path_), 2) << "event 3 went with the failed transaction";
}

TEST_F(StoreWriterTest, DeletionsFollowTheChangesQueuedBeforeThem) {
  StoreWriter writer(store_.get(), &errors_);
  writer.Submit({Events(1, 1)}, {}, nullptr);
  writer.Submit({}, {"job-1"}, nullptr);
  writer.Flush();
  auto jobs = store_->Load();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST_F(StoreWriterTest, WithoutAStoreCompletionsStillRunInOrder) {
  StoreWriter writer(nullptr, &errors_);
  for (int i = 1; i <= 3; ++i) {
    writer.Submit({}, {}, [this, i](std::vector<StoreWriter::Change>*) {
      MutexLock lock(&mutex_);
      seen_.push_back(std::to_string(i));
    });
  }
  writer.Flush();
  MutexLock lock(&mutex_);
  EXPECT_EQ(seen_, (std::vector<std::string>{"1", "2", "3"}));
}

}  // namespace
}  // namespace accumulus::server
