// The time a daemon was able to run: for the controller, to measure a
// worker's silence; for both daemons, to see and count their own stalls.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "common/metrics/registry.h"
#include "common/mutex.h"

namespace accumulus {

// The steady clock, less the stretches the controller process did not run:
// stopped (SIGSTOP, a debugger), frozen (a cgroup freezer, a paused
// container or VM) or starved. A worker is lost when the controller has not
// heard from it for the lost-worker timeout; counted in steady time, a stop
// longer than that timeout lost every worker at once on the first tick
// after it, while their heartbeats sat unread in the controller's sockets
// (and jobs spent restarts on it). Counted in awake time, a stop costs
// nothing: the workers' messages are read and the silence was never theirs.
//
// A stop shows as two readings further apart than `max_gap`; such a gap
// counts as `max_gap`. A thread of the clock's own reads it every
// `max_gap / 10`, so a gap means the process did not run (or as good as
// not), never that no one asked the time; that thread also logs the
// stalls. Awake time only moves forwards.
class AwakeClock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<AwakeClock>;
  using SteadyNow = std::function<std::chrono::steady_clock::time_point()>;

  static constexpr std::chrono::milliseconds kMaxGap{250};

  // `stalled_seconds` (may be null) counts the stalls; the log names the
  // process `who` ("the controller") and says what a stall `costs`.
  // `steady_now` reads the steady clock (a fake one in tests; it is read
  // concurrently).
  explicit AwakeClock(std::chrono::milliseconds max_gap = kMaxGap,
                      metrics::Counter* stalled_seconds = nullptr, std::string who = "the process",
                      std::string costs = "",
                      SteadyNow steady_now = std::chrono::steady_clock::now);
  ~AwakeClock();
  AwakeClock(const AwakeClock&) = delete;
  AwakeClock& operator=(const AwakeClock&) = delete;

  time_point Now() EXCLUDES(mutex_);

 private:
  void Tick() EXCLUDES(mutex_);

  const duration max_gap_;
  metrics::Counter* const stalled_seconds_;
  const std::string who_;
  const std::string costs_;
  const SteadyNow steady_now_;

  Mutex mutex_;
  std::chrono::steady_clock::time_point last_reading_ GUARDED_BY(mutex_);
  duration discounted_ GUARDED_BY(mutex_){0};  // steady time not awake
  // Stalls (whole gaps) since the ticker last logged them.
  duration unlogged_stalls_ GUARDED_BY(mutex_){0};
  bool stopping_ GUARDED_BY(mutex_) = false;
  CondVar stop_;
  std::thread ticker_;  // last: it reads the members above
};

}  // namespace accumulus
