// Records written by an older controller, read by this one. Schema version
// 1 held the API's closed sets as strings ("adamw") and a preempted attempt
// as a bool; version 2 holds them as proto enums (OPTIMIZER_KIND_ADAMW) and
// a failure class. Parsed with today's messages, a version-1 record keeps
// each old string among its unknown fields (the wire types differ), where
// this pass finds it by field number and turns it into the enum value of
// the same name.
#pragma once

#include <google/protobuf/message.h>

namespace accumulus::server {

// Upgrades `message` and every message inside it in place. A string no
// enum value is named by (there were none: the old controller validated
// them) is left as the default, 0; an empty one meant the default too.
void UpgradeClosedSetsFromStrings(google::protobuf::Message* message);

}  // namespace accumulus::server
