#include "server/state_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/temp_dir.h"

namespace accumulus::server {
namespace {

TEST(StateLock, ASecondHolderIsRefusedWithTheFirstsPidUntilItIsReleased) {
  const testing::TempDir temp;
  const std::string path = StateLock::PathFor(temp.path() + "/state.db");
  auto first = StateLock::Acquire(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();

  auto second = StateLock::Acquire(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(getpid()) + " on host "),
            std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find(path), std::string::npos);

  first->reset();  // released: the next one gets it
  EXPECT_TRUE(StateLock::Acquire(path).ok());
}

TEST(StateLock, AnUnopenableLockFileNamesItselfAndTheOsError) {
  auto lock = StateLock::Acquire("/nonexistent-dir/state.db.lock");
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lock.status().message().find("/nonexistent-dir/state.db.lock: No such file"),
            std::string::npos)
      << lock.status().message();
}

}  // namespace
}  // namespace accumulus::server
