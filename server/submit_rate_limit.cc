#include "server/submit_rate_limit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace accumulus::server {

void SubmitRateLimit::set_per_minute(int64_t per_minute) {
  per_minute_ = per_minute;
  buckets_.clear();
}

double SubmitRateLimit::Refilled(const Bucket& bucket, AwakeClock::time_point now) const {
  const double minutes = std::chrono::duration<double, std::ratio<60>>(now - bucket.filled).count();
  return std::min(static_cast<double>(per_minute_),
                  bucket.submits + std::max(minutes, 0.0) * static_cast<double>(per_minute_));
}

Status SubmitRateLimit::Take(const std::string& owner, AwakeClock::time_point now) {
  if (per_minute_ <= 0) return Status::Ok();
  const auto capacity = static_cast<double>(per_minute_);
  if (buckets_.size() >= kOwnersBeforeForgetting) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      it = Refilled(it->second, now) >= capacity ? buckets_.erase(it) : std::next(it);
    }
  }
  const auto [it, fresh] = buckets_.try_emplace(owner, Bucket{capacity, now});
  Bucket& bucket = it->second;
  const double submits = fresh ? capacity : Refilled(bucket, now);
  if (submits < 1) {
    // Rounded up to a tenth: a client that waits that long gets in.
    const double seconds = std::max(std::ceil((1 - submits) * 60 / capacity * 10) / 10, 0.1);
    char wait[32];
    std::snprintf(wait, sizeof wait, "%.1f", seconds);
    return Status::ResourceExhausted(
        owner + " submits faster than the limit for one owner, " + std::to_string(per_minute_) +
        (per_minute_ == 1 ? " job" : " jobs") +
        " a minute (--max-submits-per-minute-per-owner): nothing was submitted; the next submit "
        "fits in " +
        wait + " s");
  }
  bucket = {submits - 1, now};
  return Status::Ok();
}

}  // namespace accumulus::server
