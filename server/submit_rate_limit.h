// How fast one owner may submit jobs.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "common/awake_clock.h"
#include "common/status.h"

namespace accumulus::server {

// A token bucket per owner: `per_minute` submits a minute, in bursts of up
// to a minute's worth. The active-job quota bounds how many jobs are held
// at once; this bounds the churn through them: a script that submits short
// jobs in a loop would otherwise keep the state database's writer busy.
// (The retention, --keep-finished-jobs, takes the churning owner's own
// history first: FinishedJobs.) A plain class: its caller (JobManager)
// holds the job manager's lock.
class SubmitRateLimit {
 public:
  // 0: no limit.
  void set_per_minute(int64_t per_minute);

  // OK, and one of `owner`'s submits is spent; else RESOURCE_EXHAUSTED
  // naming the limit, its flag and when the next submit fits (nothing is
  // spent).
  Status Take(const std::string& owner, AwakeClock::time_point now);

 private:
  struct Bucket {
    double submits = 0;  // how many may go now
    AwakeClock::time_point filled;
  };
  // Owners whose buckets are full again are forgotten, once there are this
  // many: a full bucket is what an owner never seen gets.
  static constexpr size_t kOwnersBeforeForgetting = 1024;

  // `bucket` refilled up to `now`.
  double Refilled(const Bucket& bucket, AwakeClock::time_point now) const;

  int64_t per_minute_ = 0;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace accumulus::server
