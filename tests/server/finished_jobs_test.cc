// Which finished jobs go when more are held than the retention: the oldest
// of the owner who holds the most, so one owner's churn costs that owner's
// history; with one owner, the oldest; never one still stopping, nor a
// newer one in its place.
#include "server/finished_jobs.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace accumulus::server {
namespace {

bool Any(const std::string&) { return true; }

// Jobs added in the order they finish, a nanosecond apart, as a running
// controller adds them.
class FinishingJobs {
 public:
  void Add(const std::string& owner, const std::string& job_id) {
    jobs_.Add(owner, job_id, ++now_ns_);
  }
  FinishedJobs& jobs() { return jobs_; }

 private:
  FinishedJobs jobs_;
  int64_t now_ns_ = 1'700'000'000'000'000'000;
};

TEST(FinishedJobs, WithOneOwnerTheOldestGo) {
  FinishingJobs clock;
  FinishedJobs& finished = clock.jobs();
  for (const char* id : {"j1", "j2", "j3", "j4"}) clock.Add("alice", id);
  EXPECT_EQ(finished.size(), 4);
  EXPECT_EQ(finished.BeyondRetention(2, Any), (std::vector<std::string>{"j1", "j2"}));
  EXPECT_TRUE(finished.BeyondRetention(4, Any).empty());
  EXPECT_TRUE(finished.BeyondRetention(9, Any).empty());
}

TEST(FinishedJobs, TheOwnerHoldingTheMostPaysForItsChurn) {
  FinishingJobs clock;
  FinishedJobs& finished = clock.jobs();
  clock.Add("bob", "b1");
  clock.Add("carol", "c1");
  for (int i = 1; i <= 6; ++i) clock.Add("alice", "a" + std::to_string(i));
  clock.Add("bob", "b2");
  // 9 held, 4 kept: alice holds 6 of them, and keeps 2 once she is down to
  // bob's 2; then the oldest of the owners holding as many goes first.
  EXPECT_EQ(finished.BeyondRetention(4, Any),
            (std::vector<std::string>{"a1", "a2", "a3", "a4", "b1"}));
  // Down to one each.
  EXPECT_EQ(finished.BeyondRetention(3, Any),
            (std::vector<std::string>{"a1", "a2", "a3", "a4", "b1", "a5"}));
}

TEST(FinishedJobs, AJobStillStoppingStaysAndNoNewerGoesInItsPlace) {
  FinishingJobs clock;
  FinishedJobs& finished = clock.jobs();
  for (const char* id : {"j1", "j2", "j3", "j4"}) clock.Add("alice", id);
  const auto stopping = [](const std::string& id) { return id != "j1"; };
  EXPECT_EQ(finished.BeyondRetention(2, stopping), (std::vector<std::string>{"j2"}));
}

TEST(FinishedJobs, ARemovedJobIsHeldNoMore) {
  FinishingJobs clock;
  FinishedJobs& finished = clock.jobs();
  clock.Add("alice", "a1");
  clock.Add("bob", "b1");
  clock.Add("bob", "b2");
  finished.Remove("b1");  // resumed
  finished.Remove("b1");  // twice: nothing
  finished.Remove("zz");  // never held
  EXPECT_EQ(finished.size(), 2);
  EXPECT_EQ(finished.BeyondRetention(1, Any), (std::vector<std::string>{"a1"}));
  clock.Add("alice", "a1");  // held already: not twice
  EXPECT_EQ(finished.size(), 2);
  finished.Remove("a1");
  finished.Remove("b2");
  EXPECT_EQ(finished.size(), 0);
  EXPECT_TRUE(finished.BeyondRetention(0, Any).empty());
}

// A restarted controller restores jobs in the order they were submitted:
// the one that finished first still goes first.
TEST(FinishedJobs, RestoredJobsGoInTheOrderTheyFinished) {
  FinishedJobs finished;
  finished.Add("alice", "long", 3'000);  // submitted first, finished last
  finished.Add("alice", "short", 1'000);
  finished.Add("alice", "middle", 2'000);
  finished.Add("bob", "b1", 500);
  finished.Add("bob", "b2", 2'000);  // as old as middle: added later, the newer
  EXPECT_EQ(finished.BeyondRetention(3, Any), (std::vector<std::string>{"short", "b1"}));
  EXPECT_EQ(finished.BeyondRetention(1, Any),
            (std::vector<std::string>{"short", "b1", "middle", "b2"}));
}

}  // namespace
}  // namespace accumulus::server
