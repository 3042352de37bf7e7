#include "server/store_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace accumulus::server {
namespace {

// Retries of a commit the store could not make: soon at first (a lock held
// for a moment), then every few seconds (a disk someone must clear).
constexpr std::chrono::milliseconds kFirstRetry{50};
constexpr std::chrono::milliseconds kLastRetry{5000};

// Failed commits in a row that are logged: the first few, then about every
// five minutes at kLastRetry.
bool WorthALogLine(int64_t failed_commits) {
  return failed_commits <= 4 || failed_commits % 64 == 0;
}

}  // namespace

StoreWriter::StoreWriter(JobStore* store, metrics::Counter* store_errors,
                         metrics::Gauge* store_writable)
    : store_(store),
      store_errors_(store_errors),
      store_writable_(store_writable),
      thread_([this] { Run(); }) {
  store_writable_->Set(1);
}

StoreWriter::~StoreWriter() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
    retrying_ = false;
  }
  changed_.NotifyAll();
  thread_.join();
}

void StoreWriter::Submit(std::vector<Change> changes, std::vector<std::string> deletions,
                         Committed committed) {
  {
    MutexLock lock(&mutex_);
    queue_.push_back({std::move(changes), std::move(deletions), std::move(committed)});
    ++submitted_;
  }
  changed_.NotifyAll();
}

void StoreWriter::Flush() {
  MutexLock lock(&mutex_);
  const uint64_t target = submitted_;
  while (completed_ < target) changed_.Wait(&mutex_);
}

Status StoreWriter::Writable() const {
  MutexLock lock(&mutex_);
  return failing_;
}

void StoreWriter::StopRetrying() {
  {
    MutexLock lock(&mutex_);
    retrying_ = false;
  }
  changed_.NotifyAll();
}

bool StoreWriter::Take(std::vector<Batch>* pending, std::chrono::steady_clock::time_point retry_at,
                       bool* retry) {
  MutexLock lock(&mutex_);
  if (pending->empty()) {
    while (queue_.empty() && !stopping_) changed_.Wait(&mutex_);
    if (queue_.empty()) return false;  // stopping, and everything is done
  } else {
    // The backoff before a retry; StopRetrying cuts it short. (A new batch
    // wakes the wait too, and waits with the rest.)
    while (retrying_ && std::chrono::steady_clock::now() < retry_at) {
      changed_.WaitUntil(&mutex_, retry_at);
    }
  }
  // Whatever queued while the last commit ran goes in one transaction.
  for (Batch& b : queue_) pending->push_back(std::move(b));
  queue_.clear();
  *retry = retrying_;
  return true;
}

void StoreWriter::Run() {
  std::vector<Batch> pending;  // taken from the queue, in order, not yet completed
  std::chrono::milliseconds backoff{0};
  std::chrono::steady_clock::time_point retry_at;
  bool retry = true;
  while (Take(&pending, retry_at, &retry)) {
    const Status outcome = Commit(pending);
    Note(outcome, pending.size());
    if (!outcome.ok() && retry) {
      backoff = std::clamp(backoff * 2, kFirstRetry, kLastRetry);
      retry_at = std::chrono::steady_clock::now() + backoff;
      continue;
    }
    if (!outcome.ok()) {
      spdlog::error(
          "{} batches of changes are not durable (the controller is stopping): the workers send "
          "their unacknowledged messages again to the next controller",
          pending.size());
    }
    backoff = std::chrono::milliseconds{0};
    for (Batch& b : pending) {
      if (b.committed) b.committed(outcome, &b.changes);
    }
    {
      MutexLock lock(&mutex_);
      completed_ += pending.size();
    }
    pending.clear();
    changed_.NotifyAll();
  }
}

Status StoreWriter::Commit(const std::vector<Batch>& batches) {
  if (store_ == nullptr) return Status::Ok();
  std::vector<JobStore::Change> changes;
  std::vector<std::string> deletions;
  for (const Batch& b : batches) {
    for (const Change& c : b.changes) {
      JobStore::Change change{&c.job, {}};
      for (const v1::JobEvent& e : c.events) change.events.push_back(&e);
      changes.push_back(std::move(change));
    }
    deletions.insert(deletions.end(), b.deletions.begin(), b.deletions.end());
  }
  Status s = store_->Commit(changes, deletions);
  if (s.ok() || s.code() == StatusCode::kUnavailable) return s;
  // Refused for good: retrying could only block everything behind it.
  store_errors_->Increment();
  spdlog::error("{} (not durable: a restart would lose it)", s.message());
  return Status::Ok();
}

void StoreWriter::Note(const Status& outcome, size_t batches) {
  {
    MutexLock lock(&mutex_);
    failing_ = outcome;
  }
  const auto now = std::chrono::steady_clock::now();
  if (outcome.ok()) {
    if (failed_commits_ > 0) {
      spdlog::info(
          "state database {} writes again, after {} failed commits in {:.1f} s: the {} batches of "
          "changes held meanwhile are durable",
          store_->path(), failed_commits_,
          std::chrono::duration<double>(now - failing_since_).count(), batches);
    }
    failed_commits_ = 0;
    store_writable_->Set(1);
    return;
  }
  store_errors_->Increment();
  store_writable_->Set(0);
  if (failed_commits_++ == 0) failing_since_ = now;
  if (WorthALogLine(failed_commits_)) {
    spdlog::error(
        "{} (commit {} in a row that failed; retrying: until one succeeds no worker message is "
        "acknowledged, no event shown, and submit, cancel and resume are refused)",
        outcome.message(), failed_commits_);
  }
}

}  // namespace accumulus::server
