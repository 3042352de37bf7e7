// How many unfinished jobs the controller holds, in all and per owner.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

namespace accumulus::server {

// Finished jobs are bounded by their retention (--keep-finished-jobs);
// unfinished ones — queued, placed, restarting — by this: a script that
// submits in a loop, or one owner's backlog, must not grow the controller's
// memory, its state database and everyone's queue without end. A plain
// class: its caller (JobLifecycle) holds the job manager's lock.
class ActiveJobQuota {
 public:
  // 0: no limit.
  void set_limits(int64_t total, int64_t per_owner) {
    total_ = total;
    per_owner_ = per_owner;
  }

  // OK when one more unfinished job of `owner`'s fits; else
  // RESOURCE_EXHAUSTED naming the limit reached and its flag, and what
  // `action` ("submitted", "resumed") did not do.
  Status Admit(const std::string& owner, const std::string& action) const;
  // A job of `owner`'s went from `from` to `to` (from UNSPECIFIED: it is
  // new, or read back from the store).
  void Moved(const std::string& owner, v1::JobState from, v1::JobState to);

 private:
  int64_t total_ = 0;
  int64_t per_owner_ = 0;
  int64_t active_ = 0;
  std::map<std::string, int64_t> active_by_owner_;  // only owners with some
};

}  // namespace accumulus::server
