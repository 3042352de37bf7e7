#include "common/awake_clock.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace accumulus {

AwakeClock::AwakeClock(std::chrono::milliseconds max_gap, metrics::Counter* stalled_seconds,
                       std::string who, std::string costs, SteadyNow steady_now)
    : max_gap_(max_gap),
      stalled_seconds_(stalled_seconds),
      who_(std::move(who)),
      costs_(std::move(costs)),
      steady_now_(std::move(steady_now)),
      last_reading_(steady_now_()),
      ticker_([this] { Tick(); }) {}

AwakeClock::~AwakeClock() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
  }
  stop_.NotifyAll();
  ticker_.join();
}

AwakeClock::time_point AwakeClock::Now() {
  const std::chrono::steady_clock::time_point reading = steady_now_();
  duration stall{0};
  time_point now;
  {
    MutexLock lock(&mutex_);
    // Readings race for the lock: one taken earlier may come in later, and
    // then it is not news.
    if (reading > last_reading_) {
      const duration gap = reading - last_reading_;
      if (gap > max_gap_) {
        stall = gap;
        discounted_ += gap - max_gap_;
        unlogged_stalls_ += gap;
      }
      last_reading_ = reading;
    }
    now = time_point(last_reading_.time_since_epoch() - discounted_);
  }
  if (stall > duration::zero() && stalled_seconds_ != nullptr) {
    stalled_seconds_->Increment(std::chrono::duration<double>(stall).count());
  }
  return now;
}

void AwakeClock::Tick() {
  const auto interval = max_gap_ / 10;
  while (true) {
    duration stalls{0};
    {
      MutexLock lock(&mutex_);
      if (!stopping_) stop_.WaitFor(&mutex_, interval);
      if (stopping_) return;
    }
    Now();
    {
      MutexLock lock(&mutex_);
      std::swap(stalls, unlogged_stalls_);
    }
    // Here, not in Now(): its callers may hold locks under which nothing
    // waits on a write.
    if (stalls > duration::zero()) {
      spdlog::warn("{} did not run for {:.3f} s (stopped, frozen or starved of CPU){}{}", who_,
                   std::chrono::duration<double>(stalls).count(), costs_.empty() ? "" : "; ",
                   costs_);
    }
  }
}

}  // namespace accumulus
