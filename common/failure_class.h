// What kind of failure a Status is, for programs (v1::FailureClass): the
// trainer's exit and the worker's refusal of a spec say it the same way.
#pragma once

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

namespace accumulus {

// Its Fault where the code that failed said, else what its code means for a
// job: INVALID_ARGUMENT, NOT_FOUND and FAILED_PRECONDITION the spec's,
// RESOURCE_EXHAUSTED memory, DATA_LOSS storage, UNAVAILABLE and
// DEADLINE_EXCEEDED the collective's, CANCELLED a cancel, anything else
// internal. UNSPECIFIED for OK.
v1::FailureClass FailureClassOf(const Status& status);

}  // namespace accumulus
