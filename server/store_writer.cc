#include "server/store_writer.h"

#include <spdlog/spdlog.h>

namespace accumulus::server {

StoreWriter::StoreWriter(JobStore* store, metrics::Counter* store_errors)
    : store_(store), store_errors_(store_errors), thread_([this] { Run(); }) {}

StoreWriter::~StoreWriter() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
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

void StoreWriter::Run() {
  while (true) {
    std::vector<Batch> batches;
    {
      MutexLock lock(&mutex_);
      while (queue_.empty() && !stopping_) changed_.Wait(&mutex_);
      if (queue_.empty()) return;  // stopping, and everything is done
      // Whatever queued while the last commit ran goes in one transaction.
      for (Batch& b : queue_) batches.push_back(std::move(b));
      queue_.clear();
    }
    Commit(batches);
    for (Batch& b : batches) {
      if (b.committed) b.committed(&b.changes);
    }
    {
      MutexLock lock(&mutex_);
      completed_ += batches.size();
    }
    changed_.NotifyAll();
  }
}

void StoreWriter::Commit(const std::vector<Batch>& batches) {
  if (store_ == nullptr) return;
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
  if (Status s = store_->Commit(changes, deletions); !s.ok()) {
    store_errors_->Increment();
    spdlog::error("{} (not durable: a restart would lose it)", s.message());
  }
}

}  // namespace accumulus::server
