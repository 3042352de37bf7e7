#include "server/active_job_quota.h"

#include "server/job_state.h"

namespace accumulus::server {

Status ActiveJobQuota::Admit(const std::string& owner, const std::string& action) const {
  if (total_ > 0 && active_ >= total_) {
    return Status::ResourceExhausted(
        "the controller already holds " + std::to_string(active_) +
        " unfinished jobs, its limit (--max-active-jobs): nothing was " + action +
        "; try again once some have finished");
  }
  auto mine = active_by_owner_.find(owner);
  const int64_t of_owner = mine == active_by_owner_.end() ? 0 : mine->second;
  if (per_owner_ > 0 && of_owner >= per_owner_) {
    return Status::ResourceExhausted(
        owner + " already has " + std::to_string(of_owner) +
        " unfinished jobs, the limit for one owner (--max-active-jobs-per-owner): nothing was " +
        action + "; wait for some to finish, or cancel some");
  }
  return Status::Ok();
}

void ActiveJobQuota::Moved(const std::string& owner, v1::JobState from, v1::JobState to) {
  const bool was = from != v1::JOB_STATE_UNSPECIFIED && !IsTerminal(from);
  const bool is = to != v1::JOB_STATE_UNSPECIFIED && !IsTerminal(to);
  if (was == is) return;
  const int64_t delta = is ? 1 : -1;
  active_ += delta;
  if ((active_by_owner_[owner] += delta) == 0) active_by_owner_.erase(owner);
}

}  // namespace accumulus::server
