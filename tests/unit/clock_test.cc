// Event timestamps carry sub-second precision (latencies and per-step rates
// are computed from them).
#include "common/clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace accumulus {
namespace {

TEST(Now, HasSubSecondPrecisionAndFollowsTheSystemClock) {
  bool fractional = false;
  for (int i = 0; i < 1000 && !fractional; ++i) fractional = Now().nanos() % 1000000 != 0;
  EXPECT_TRUE(fractional) << "a thousand readings all on whole milliseconds";
  const auto system = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_LE(std::abs(Now().seconds() - system), 1);
}

}  // namespace
}  // namespace accumulus
