#include "common/job_attempts.h"

#include <algorithm>

namespace accumulus {

int32_t PreemptedAttempts(const v1::Job& job) {
  return static_cast<int32_t>(
      std::count_if(job.attempts().begin(), job.attempts().end(), [](const v1::Attempt& attempt) {
        return attempt.failure_class() == v1::FAILURE_CLASS_PREEMPTED;
      }));
}

int32_t RestartsUsed(const v1::Job& job) { return job.attempt() - 1 - PreemptedAttempts(job); }

int32_t MaxAttempts(const v1::Job& job) {
  return job.spec().max_restarts() + 1 + PreemptedAttempts(job);
}

}  // namespace accumulus
