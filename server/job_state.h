// Small facts about job states and ids shared by the job manager and its
// store.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "accumulus/v1/job.pb.h"

namespace accumulus::server {

inline bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_SUCCEEDED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

// "running", "succeeded", ...: the state's name for logs and metric labels.
inline std::string StateLabel(v1::JobState s) {
  std::string name = v1::JobState_Name(s).substr(std::string("JOB_STATE_").size());
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name;
}

}  // namespace accumulus::server
