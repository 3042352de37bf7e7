// The store's writer thread: each batch's completion runs after its commit
// (the events are in the database by then), in submission order; Flush
// waits for every completion. A commit the store refuses for good is
// counted and rolled back, and its completion still runs (the controller
// carries on in memory); one it cannot make now (the file locked by another
// connection, as a backup would) is retried, and its completion waits for
// it — or, when the writer stops retrying, is told it is not durable.
#include "server/store_writer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <string>
#include <thread>
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

// Holds the database's write lock on a connection of its own (SQLite then
// refuses the writer's commits as busy) until Release.
class WriteLock {
 public:
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~WriteLock() { Release(); }
  void Release() {
    if (db_ == nullptr) return;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Waits until the writer reports its store unwritable (a commit failed and
// is being retried); false if it has not within a minute.
bool Unwritable(const StoreWriter& writer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (writer.Writable().ok()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
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
  metrics::Gauge writable_;
  Mutex mutex_;
  std::vector<std::string> seen_ GUARDED_BY(mutex_);
};

TEST_F(StoreWriterTest, EachCompletionRunsAfterItsCommitInSubmissionOrder) {
  StoreWriter writer(store_.get(), &errors_, &writable_);
  for (int64_t batch = 1; batch <= 3; ++batch) {
    const int64_t last = batch * 2;
    writer.Submit({Events(last - 1, last)}, {},
                  [this, last](const Status& outcome, std::vector<StoreWriter::Change>* c) {
                    EXPECT_TRUE(outcome.ok()) << outcome.ToString();
                    const int64_t stored = StoredThrough(path_);
                    MutexLock lock(&mutex_);
                    seen_.push_back("through " +
                                    std::to_string(c->back().events.back().sequence()) +
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
  StoreWriter writer(store_.get(), &errors_, &writable_);
  writer.Submit({Events(1, 2)}, {}, nullptr);
  writer.Flush();
  bool ran = false;
  // Sequence 2 again: the primary key refuses it, and the whole batch goes.
  writer.Submit(
      {Events(2, 3)}, {}, [&ran](const Status& outcome, std::vector<StoreWriter::Change>*) {
        EXPECT_TRUE(outcome.ok()) << "refused for good: the controller carries on in memory";
        ran = true;
      });
  writer.Flush();
  EXPECT_TRUE(ran);
  EXPECT_EQ(errors_.Value(), 1);
  EXPECT_EQ(StoredThrough(path_), 2) << "event 3 went with the failed transaction";
}

TEST_F(StoreWriterTest, ACommitTheStoreCannotMakeNowIsRetriedAndCompletionsWaitForIt) {
  StoreWriter writer(store_.get(), &errors_, &writable_);
  EXPECT_EQ(writable_.Value(), 1);
  WriteLock lock(path_);
  const auto record = [this](const Status& outcome, std::vector<StoreWriter::Change>* c) {
    const int64_t last = c->back().events.back().sequence();
    const bool stored = StoredThrough(path_) >= last;
    MutexLock l(&mutex_);
    seen_.push_back(outcome.ToString() + " through " + std::to_string(last) +
                    (stored ? " stored" : " NOT stored"));
  };
  writer.Submit({Events(1, 2)}, {}, record);
  ASSERT_TRUE(Unwritable(writer));
  EXPECT_EQ(writer.Writable().code(), StatusCode::kUnavailable);
  EXPECT_NE(writer.Writable().message().find("database is locked"), std::string::npos)
      << writer.Writable().ToString();
  EXPECT_EQ(writable_.Value(), 0);
  EXPECT_GE(errors_.Value(), 1);
  writer.Submit({Events(3, 3)}, {}, record);  // waits behind the first
  {
    MutexLock l(&mutex_);
    EXPECT_TRUE(seen_.empty()) << "nothing completes before it is durable";
  }
  lock.Release();
  writer.Flush();
  EXPECT_TRUE(writer.Writable().ok());
  EXPECT_EQ(writable_.Value(), 1);
  MutexLock l(&mutex_);
  EXPECT_EQ(seen_, (std::vector<std::string>{"OK through 2 stored", "OK through 3 stored"}))
      << "completions in submission order, each once its batch is durable";
}

TEST_F(StoreWriterTest, StoppingWhileTheStoreCannotWriteCompletesTheBatchesAsNotDurable) {
  StoreWriter writer(store_.get(), &errors_, &writable_);
  WriteLock lock(path_);
  Status told;
  writer.Submit(
      {Events(1, 2)}, {},
      [&told](const Status& outcome, std::vector<StoreWriter::Change>*) { told = outcome; });
  ASSERT_TRUE(Unwritable(writer));
  writer.StopRetrying();
  writer.Flush();
  EXPECT_EQ(told.code(), StatusCode::kUnavailable) << told.ToString();
  EXPECT_NE(told.message().find("state database " + path_), std::string::npos) << told.ToString();
  lock.Release();
  EXPECT_EQ(StoredThrough(path_), 0);
}

TEST_F(StoreWriterTest, DeletionsFollowTheChangesQueuedBeforeThem) {
  StoreWriter writer(store_.get(), &errors_, &writable_);
  writer.Submit({Events(1, 1)}, {}, nullptr);
  writer.Submit({}, {"job-1"}, nullptr);
  writer.Flush();
  auto jobs = store_->Load();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

TEST_F(StoreWriterTest, WithoutAStoreCompletionsStillRunInOrder) {
  StoreWriter writer(nullptr, &errors_, &writable_);
  for (int i = 1; i <= 3; ++i) {
    writer.Submit({}, {}, [this, i](const Status&, std::vector<StoreWriter::Change>*) {
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
