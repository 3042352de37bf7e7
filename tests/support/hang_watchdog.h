// A test's guard against hanging without a word. An end-to-end test waits on
// real processes (a watch stream, a worker's log line); if a fault leaves one
// waiting forever, the runner's timeout kills the test and all CI shows is
// "Timeout". Armed for the test's lifetime, the watchdog fires once the test
// has run past its limit: it prints the last lines of every log under the
// test's directory (controller, workers, trainers), then kills every process
// the test started, with their children — what the test waits on ends, and
// the test fails on its own assertions. A test that still does not end
// within a grace period ends the process, failing.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "common/mutex.h"

namespace accumulus::testing {

// $ACCUMULUS_TEST_HANG_SECONDS, or 240 s: under ctest's 300 s for an
// end-to-end test, so that the report comes before ctest's kill. 0 turns
// the watchdog off (a debugger session).
std::chrono::seconds TestHangLimit();

class HangWatchdog {
 public:
  // `log_dir`: where the test's processes write their logs; `test_name`
  // heads the report.
  HangWatchdog(std::string log_dir, std::string test_name, std::chrono::seconds limit);
  ~HangWatchdog();  // disarms it, and waits for a report under way
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

 private:
  void Watch(std::chrono::steady_clock::time_point deadline) EXCLUDES(mutex_);
  // Waits until `deadline`; false if disarmed before it.
  bool StillArmedAt(std::chrono::steady_clock::time_point deadline) EXCLUDES(mutex_);

  const std::string log_dir_;
  const std::string test_name_;
  const std::chrono::seconds limit_;
  Mutex mutex_;
  CondVar disarmed_changed_;
  bool disarmed_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace accumulus::testing
