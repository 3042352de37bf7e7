// What a class label in a data file must be, as every reader says it.
#pragma once

#include <cstdint>
#include <string>

namespace accumulus::data {

// The most classes a job may have: data.outputs' limit (common/job_spec.cc).
inline constexpr int64_t kMaxClasses = int64_t{1} << 20;

// The classes a label must fall below: those the spec declares, else
// kMaxClasses.
inline int64_t ClassLimit(int64_t declared_classes) {
  return declared_classes > 0 ? declared_classes : kMaxClasses;
}

// "a class index from 0 to 9 (data.outputs 10)", or without declared
// classes, up to kMaxClasses.
std::string ExpectedClass(int64_t declared_classes);

}  // namespace accumulus::data
