// What a job's attempts add up to, as the controller decides restarts and
// the CLI shows them: an attempt that ended through no doing of its own —
// its worker shut down (preempted), or lost the controller for longer than
// its lease (controller_unreachable) — spends no restart, and a resume by
// request gives the job its max_restarts afresh (a user who pauses and
// resumes a job, or resumes one that ran out of restarts, gets a job that
// survives a fault again).
#pragma once

#include <cstdint>

#include "accumulus/v1/job.pb.h"

namespace accumulus {

// Whether an attempt that ended so is restarted without spending one of the
// job's max_restarts.
bool SpendsNoRestart(v1::FailureClass failure_class);

// Restarts spent so far: the ended attempts since the job's last resume by
// request (all, if none) that spent one.
int32_t RestartsUsed(const v1::Job& job);

}  // namespace accumulus
