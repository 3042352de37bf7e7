// Submits are bounded per owner and per minute: a minute's worth at once,
// then as the bucket refills; a refusal names the limit, its flag and when
// the next submit fits, and spends nothing.
#include "server/submit_rate_limit.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace accumulus::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

AwakeClock::time_point At(milliseconds since_start) { return AwakeClock::time_point(since_start); }

TEST(SubmitRateLimit, AMinutesWorthGoesAtOnceThenOnePerRefill) {
  SubmitRateLimit limit;
  limit.set_per_minute(60);  // one a second
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limit.Take("alice", At(seconds(0))).ok()) << i;
  const Status refused = limit.Take("alice", At(milliseconds(250)));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "alice submits faster than the limit for one owner, 60 jobs a minute "
            "(--max-submits-per-minute-per-owner): nothing was submitted; the next submit fits "
            "in 0.8 s");
  EXPECT_TRUE(limit.Take("bob", At(milliseconds(250))).ok()) << "another owner's bucket is full";
  // The refusal spent nothing: the second's refill is one submit, not less.
  EXPECT_TRUE(limit.Take("alice", At(seconds(1))).ok());
  EXPECT_FALSE(limit.Take("alice", At(seconds(1))).ok());
  // Refilled at the rate, never beyond a minute's worth.
  for (int i = 0; i < 60; ++i) ASSERT_TRUE(limit.Take("alice", At(seconds(600))).ok()) << i;
  EXPECT_FALSE(limit.Take("alice", At(seconds(600))).ok());
}

TEST(SubmitRateLimit, ZeroIsNoLimit) {
  SubmitRateLimit limit;
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(limit.Take("alice", At(seconds(0))).ok());
  limit.set_per_minute(2);
  EXPECT_TRUE(limit.Take("alice", At(seconds(0))).ok());
  EXPECT_TRUE(limit.Take("alice", At(seconds(0))).ok());
  EXPECT_FALSE(limit.Take("alice", At(seconds(0))).ok());
  limit.set_per_minute(0);
  EXPECT_TRUE(limit.Take("alice", At(seconds(0))).ok());
}

// Owners come and go (one per token); their buckets do not stay forever.
TEST(SubmitRateLimit, ManyOwnersAreLimitedAlike) {
  SubmitRateLimit limit;
  limit.set_per_minute(1);
  for (int i = 0; i < 5000; ++i) {
    const std::string owner = "owner-" + std::to_string(i);
    const auto now = At(seconds(i));
    ASSERT_TRUE(limit.Take(owner, now).ok()) << owner;
    ASSERT_FALSE(limit.Take(owner, now).ok()) << owner;
  }
  EXPECT_TRUE(limit.Take("owner-0", At(seconds(5000))).ok()) << "refilled long ago";
  EXPECT_FALSE(limit.Take("owner-4999", At(seconds(5000))).ok()) << "59 s of 60 refilled";
}

}  // namespace
}  // namespace accumulus::server
