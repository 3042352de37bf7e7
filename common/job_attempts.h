// What a job's attempts add up to, as the controller decides restarts and
// the CLI shows them: an attempt its worker's shutdown ended (preempted)
// spends no restart.
#pragma once

#include <cstdint>

#include "accumulus/v1/job.pb.h"

namespace accumulus {

// Ended attempts that were preempted.
int32_t PreemptedAttempts(const v1::Job& job);

// Restarts spent so far: attempts before the current one that failed.
int32_t RestartsUsed(const v1::Job& job);

// The most attempts the job may have, given the preemptions so far.
int32_t MaxAttempts(const v1::Job& job);

}  // namespace accumulus
