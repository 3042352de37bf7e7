#include "server/finished_jobs.h"

#include <algorithm>

namespace accumulus::server {

void FinishedJobs::Add(const std::string& owner, const std::string& job_id, int64_t finished_ns) {
  if (!owner_of_.emplace(job_id, owner).second) return;  // held already
  std::deque<Entry>& jobs = by_owner_[owner];
  Entry entry{finished_ns, added_++, job_id};
  // A job that finishes now is the newest: its place is found at once. Only
  // jobs restored in submission order look further back.
  auto at = jobs.end();
  while (at != jobs.begin() && entry.FinishedBefore(*std::prev(at))) --at;
  jobs.insert(at, std::move(entry));
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
  // Each owner's jobs not yet taken: [next, end) of its deque.
  struct Cursor {
    const std::deque<Entry>* jobs;
    size_t next = 0;
    size_t left() const { return jobs->size() - next; }
    const Entry& oldest() const { return (*jobs)[next]; }
  };
  std::vector<Cursor> owners;
  owners.reserve(by_owner_.size());
  for (const auto& [owner, jobs] : by_owner_) owners.push_back({&jobs});
  std::vector<std::string> doomed;
  for (int64_t beyond = size() - std::max<int64_t>(keep, 0); beyond > 0; --beyond) {
    Cursor* fullest = nullptr;
    for (Cursor& c : owners) {
      if (c.left() == 0) continue;
      if (fullest == nullptr || c.left() > fullest->left() ||
          (c.left() == fullest->left() && c.oldest().FinishedBefore(fullest->oldest()))) {
        fullest = &c;
      }
    }
    const Entry& taken = fullest->oldest();
    ++fullest->next;
    if (may_delete(taken.job_id)) doomed.push_back(taken.job_id);
  }
  return doomed;
}

}  // namespace accumulus::server
