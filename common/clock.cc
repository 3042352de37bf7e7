#include "common/clock.h"

#include <google/protobuf/util/time_util.h>

#include <chrono>

namespace accumulus {

google::protobuf::Timestamp Now() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
}

}  // namespace accumulus
