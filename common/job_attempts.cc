#include "common/job_attempts.h"

namespace accumulus {

bool SpendsNoRestart(v1::FailureClass failure_class) {
  return failure_class == v1::FAILURE_CLASS_PREEMPTED ||
         failure_class == v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE;
}

int32_t RestartsUsed(const v1::Job& job) {
  int32_t used = 0;
  for (const v1::Attempt& attempt : job.attempts()) {
    if (attempt.resumed_by_request()) {
      used = 0;
    } else if (!SpendsNoRestart(attempt.failure_class())) {
      ++used;
    }
  }
  return used;
}

}  // namespace accumulus
