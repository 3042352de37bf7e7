// A daemon's awake time: the steady clock, less the stretches the process
// did not run. Driven by a steady clock the test sets, which also
// counts its readings, so that the test can wait for the clock's own thread
// to have read it.
#include "common/awake_clock.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/metrics/registry.h"
#include "common/mutex.h"

namespace accumulus {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

class FakeSteadyClock {
 public:
  steady_clock::time_point Now() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    ++readings_;
    read_.NotifyAll();
    return now_;
  }
  void Advance(steady_clock::duration by) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    now_ += by;
  }
  // Waits until someone other than the caller has read the time after now.
  void AwaitReading() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    const int64_t seen = readings_;
    while (readings_ == seen) read_.Wait(&mutex_);
  }

 private:
  Mutex mutex_;
  CondVar read_;
  steady_clock::time_point now_ GUARDED_BY(mutex_){std::chrono::hours(1)};
  int64_t readings_ GUARDED_BY(mutex_) = 0;
};

class AwakeClockTest : public ::testing::Test {
 protected:
  FakeSteadyClock steady_;
  metrics::Registry registry_;
  metrics::Counter* stalled_ = registry_.AddCounter("stalled_seconds_total", "")->WithLabels({});
  AwakeClock clock_{milliseconds(250), stalled_, "the test", "", [this] { return steady_.Now(); }};
};

TEST_F(AwakeClockTest, FollowsTheSteadyClockWhileTheProcessRuns) {
  const AwakeClock::time_point start = clock_.Now();
  for (int i = 0; i < 10; ++i) {
    steady_.Advance(milliseconds(200));
    EXPECT_EQ(clock_.Now() - start, milliseconds(200) * (i + 1));
  }
  EXPECT_EQ(stalled_->Value(), 0.0);
}

// A stop of 5 s between two readings moves awake time by the 250 ms that
// still count as running; all of it is counted as a stall.
TEST_F(AwakeClockTest, AStopCountsOnlyAsLongAsTheLongestGapThatIsNotOne) {
  const AwakeClock::time_point start = clock_.Now();
  steady_.Advance(std::chrono::seconds(5));
  EXPECT_EQ(clock_.Now() - start, milliseconds(250));
  EXPECT_DOUBLE_EQ(stalled_->Value(), 5.0);
  steady_.Advance(milliseconds(100));
  EXPECT_EQ(clock_.Now() - start, milliseconds(350)) << "and it runs on after the stop";
}

// Nobody asking the time is not a stop: the clock's own thread reads it
// while the process runs, so two seconds in steps of 100 ms are two seconds.
TEST_F(AwakeClockTest, AQuietStretchIsNotAStop) {
  const AwakeClock::time_point start = clock_.Now();
  for (int i = 0; i < 20; ++i) {
    steady_.Advance(milliseconds(100));
    steady_.AwaitReading();
  }
  EXPECT_EQ(clock_.Now() - start, std::chrono::seconds(2));
  EXPECT_EQ(stalled_->Value(), 0.0);
}

// Two threads read the steady clock, and the later reading takes the lock
// first: the earlier one may not move awake time back.
TEST_F(AwakeClockTest, NeverGoesBackwards) {
  steady_.Advance(milliseconds(100));
  const AwakeClock::time_point later = clock_.Now();
  steady_.Advance(milliseconds(-50));
  EXPECT_EQ(clock_.Now(), later);
}

}  // namespace
}  // namespace accumulus
