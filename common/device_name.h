// How a worker's device slot is named to people and in placements: "cpu:0",
// "cuda:1".
#pragma once

#include <string>

#include "accumulus/v1/worker.pb.h"
#include "common/enum_names.h"

namespace accumulus {

inline std::string DeviceName(const v1::Device& device) {
  return NameOf(device.kind()) + ":" + std::to_string(device.index());
}

}  // namespace accumulus
