// Reading what `accumulus -o json` prints back into the API's messages.
#pragma once

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <string>

namespace accumulus::testing {

// `line` parsed as a `Message`; a line that is not one fails the test.
template <typename Message>
Message FromJson(const std::string& line) {
  Message message;
  const auto status = google::protobuf::util::JsonStringToMessage(line, &message);
  EXPECT_TRUE(status.ok()) << status.ToString() << " in: " << line;
  return message;
}

}  // namespace accumulus::testing
