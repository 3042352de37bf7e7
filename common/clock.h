// Wall-clock timestamps for events and job records, to the nanosecond the
// system clock gives. (protobuf's TimeUtil::GetCurrentTime in the Debian 12
// build returns whole seconds, too coarse for per-step events.)
#pragma once

#include <google/protobuf/timestamp.pb.h>

namespace accumulus {

google::protobuf::Timestamp Now();

}  // namespace accumulus
