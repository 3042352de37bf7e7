#include "common/job_attempts.h"

namespace accumulus {

int32_t RestartsUsed(const v1::Job& job) {
  int32_t used = 0;
  for (const v1::Attempt& attempt : job.attempts()) {
    if (attempt.resumed_by_request()) {
      used = 0;
    } else if (attempt.failure_class() != v1::FAILURE_CLASS_PREEMPTED) {
      ++used;
    }
  }
  return used;
}

}  // namespace accumulus
