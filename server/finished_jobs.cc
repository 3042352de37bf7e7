#include "server/finished_jobs.h"

#include <algorithm>

namespace accumulus::server {

void FinishedJobs::Add(const std::string& owner, const std::string& job_id) {
  if (!owner_of_.emplace(job_id, owner).second) return;  // held already
  by_owner_[owner].push_back({added_++, job_id});
}

void FinishedJobs::Remove(const std::string& job_id) {
  const auto owner = owner_of_.find(job_id);
  if (owner == owner_of_.end()) return;
  const auto held = by_owner_.find(owner->second);
  owner_of_.erase(owner);
  std::deque<Entry>& jobs = held->second;
  jobs.erase(
      std::find_if(jobs.begin(), jobs.end(), [&](const Entry& e) { return e.job_id == job_id; }));
  if (jobs.empty()) by_owner_.erase(held);
}

std::vector<std::string> FinishedJobs::BeyondRetention(
    int64_t keep, const std::function<bool(const std::string&)>& may_delete) const {
  std::vector<std::string> doomed;
  // Each owner's jobs not yet taken: [taken, end) of its deque.
  std::map<std::string, size_t> taken;
  for (int64_t beyond = size() - std::max<int64_t>(keep, 0); beyond > 0; --beyond) {
    const Entry* oldest = nullptr;
    size_t most = 0;
    const std::string* owner = nullptr;
    for (const auto& [name, jobs] : by_owner_) {
      const size_t from = taken[name];
      const size_t left = jobs.size() - from;
      if (left == 0) continue;
      if (left > most || (left == most && jobs[from].order < oldest->order)) {
        most = left;
        oldest = &jobs[from];
        owner = &name;
      }
    }
    ++taken[*owner];
    if (may_delete(oldest->job_id)) doomed.push_back(oldest->job_id);
  }
  return doomed;
}

}  // namespace accumulus::server
