#include "server/watch_quota.h"

#include <utility>

namespace accumulus::server {

WatchQuota::Ticket::~Ticket() { quota_->Release(caller_); }

StatusOr<std::unique_ptr<WatchQuota::Ticket>> WatchQuota::Take(const std::string& caller) {
  MutexLock lock(&mutex_);
  if (total_ > 0 && open_ >= total_) {
    return Status::ResourceExhausted(
        "the controller already serves " + std::to_string(open_) +
        " watch streams, its limit (--max-watchers); try again once some have closed");
  }
  auto mine = open_by_caller_.find(caller);
  const int of_caller = mine == open_by_caller_.end() ? 0 : mine->second;
  if (per_caller_ > 0 && of_caller >= per_caller_) {
    return Status::ResourceExhausted(
        "you already have " + std::to_string(of_caller) +
        " watch streams open, the limit for one caller (--max-watchers-per-caller); close some "
        "first");
  }
  ++open_;
  ++open_by_caller_[caller];
  return std::unique_ptr<Ticket>(new Ticket(this, caller));
}

void WatchQuota::Release(const std::string& caller) {
  MutexLock lock(&mutex_);
  --open_;
  auto mine = open_by_caller_.find(caller);
  if (mine != open_by_caller_.end() && --mine->second == 0) open_by_caller_.erase(mine);
}

}  // namespace accumulus::server
