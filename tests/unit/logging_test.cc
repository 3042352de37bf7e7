// The controller logs asynchronously (its job manager logs under its lock):
// every line still reaches stderr, in order, by the time StopLogging
// returns, and what logs after it is written at once.
#include "common/logging.h"

#include <gtest/gtest.h>

#include <string>

namespace accumulus {
namespace {

TEST(Logging, AsynchronousLinesAreAllWrittenInOrderByStopLoggingAndLaterOnesAtOnce) {
  LoggingOptions options;
  options.asynchronous = true;
  ASSERT_TRUE(SetUpLogging("controller", options).ok());
  testing::internal::CaptureStderr();
  for (int i = 0; i < 1000; ++i) spdlog::info("line {}", i);
  StopLogging();
  spdlog::info("after the stop");
  const std::string written = testing::internal::GetCapturedStderr();
  size_t at = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string line = "controller: line " + std::to_string(i) + "\n";
    const size_t found = written.find(line, at);
    ASSERT_NE(found, std::string::npos) << "missing or out of order: " << line;
    at = found + line.size();
  }
  EXPECT_NE(written.find("controller: after the stop\n", at), std::string::npos);
}

TEST(Logging, AnUnknownLevelOrFormatIsNamed) {
  LoggingOptions level;
  level.level = "loud";
  EXPECT_NE(SetUpLogging("worker", level).message().find("--log-level \"loud\""),
            std::string::npos);
  LoggingOptions format;
  format.format = "xml";
  EXPECT_NE(SetUpLogging("worker", format).message().find("--log-format \"xml\""),
            std::string::npos);
}

}  // namespace
}  // namespace accumulus
