// The finished jobs the controller keeps, and which of them go first when
// there are more than --keep-finished-jobs.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace accumulus::server {

// Finished jobs by owner, each owner's in the order they finished (by their
// finish time, so also when a restarted controller restores them in the
// order they were submitted). Beyond
// the retention the oldest job of the owner who holds the most goes first
// (of owners holding as many, the one whose oldest finished first): one
// owner's stream of short jobs pushes out its own history, never another
// owner's while it holds more. With one owner this is plain oldest-first.
// A plain class: its caller (JobLifecycle) holds the job manager's lock.
class FinishedJobs {
 public:
  // `job_id` of `owner` finished (or was restored finished) at
  // `finished_ns` (Unix time in nanoseconds; of jobs that finished at the
  // same time, the one added first is the older).
  void Add(const std::string& owner, const std::string& job_id, int64_t finished_ns);
  // `job_id` is finished no more (resumed), or deleted.
  void Remove(const std::string& job_id);
  int64_t size() const { return static_cast<int64_t>(owner_of_.size()); }

  // The jobs to delete to come down to `keep`: taken one at a time, each
  // the oldest of the owner who holds the most of those not yet taken. Of
  // them, those `may_delete` refuses (a job whose ranks are still stopping
  // holds their slots) stay for a later call, and no newer job goes in
  // their place. The caller Removes the rest.
  std::vector<std::string> BeyondRetention(
      int64_t keep, const std::function<bool(const std::string&)>& may_delete) const;

 private:
  struct Entry {
    int64_t finished_ns;
    uint64_t added;  // when it was added, across owners: the tie-break
    std::string job_id;

    bool FinishedBefore(const Entry& other) const {
      return finished_ns != other.finished_ns ? finished_ns < other.finished_ns
                                              : added < other.added;
    }
  };

  std::map<std::string, std::deque<Entry>> by_owner_;  // no owner holds none
  std::map<std::string, std::string> owner_of_;        // job id → owner
  uint64_t added_ = 0;
};

}  // namespace accumulus::server
