// WatchJob streams are bounded in all and per caller; a stream's place is
// given back when it ends, and a refusal names the limit and its flag.
#include "server/watch_quota.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace accumulus::server {
namespace {

TEST(WatchQuota, ACallerAtItsLimitIsRefusedWhileOthersMayStillWatch) {
  WatchQuota quota(/*total=*/10, /*per_caller=*/2);
  std::vector<std::unique_ptr<WatchQuota::Ticket>> alice;
  for (int i = 0; i < 2; ++i) alice.push_back(*quota.Take("alice"));
  StatusOr<std::unique_ptr<WatchQuota::Ticket>> third = quota.Take("alice");
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("you already have 2 watch streams open"),
            std::string::npos)
      << third.status().message();
  EXPECT_NE(third.status().message().find("--max-watchers-per-caller"), std::string::npos);
  EXPECT_TRUE(quota.Take("bob").ok());

  alice.pop_back();  // a stream ended
  EXPECT_TRUE(quota.Take("alice").ok()) << "its place was given back";
}

TEST(WatchQuota, TheTotalBoundsEveryCallerTogether) {
  WatchQuota quota(/*total=*/3, /*per_caller=*/0);
  std::vector<std::unique_ptr<WatchQuota::Ticket>> open;
  for (const char* caller : {"alice", "bob", "carol"}) open.push_back(*quota.Take(caller));
  StatusOr<std::unique_ptr<WatchQuota::Ticket>> fourth = quota.Take("dave");
  ASSERT_FALSE(fourth.ok());
  EXPECT_NE(fourth.status().message().find("already serves 3 watch streams, its limit "
                                           "(--max-watchers)"),
            std::string::npos)
      << fourth.status().message();
  open.clear();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(quota.Take("dave").ok()) << "all given back";
}

TEST(WatchQuota, ZeroMeansNoLimit) {
  WatchQuota quota(0, 0);
  std::vector<std::unique_ptr<WatchQuota::Ticket>> open;
  for (int i = 0; i < 5000; ++i) {
    StatusOr<std::unique_ptr<WatchQuota::Ticket>> ticket = quota.Take("alice");
    ASSERT_TRUE(ticket.ok());
    open.push_back(std::move(*ticket));
  }
}

}  // namespace
}  // namespace accumulus::server
