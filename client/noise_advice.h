// What the measured gradient noise scale means for a job's batch, in one
// sentence for `accumulus get`.
#pragma once

#include <string>

#include "accumulus/v1/job.pb.h"

namespace accumulus::client {

// "global batch 512 is 0.27× the measured noise scale 1.9k samples:
// accumulation 32 at micro 64 would reach it", or empty when the job's
// latest step carries no estimate. For token models the noise scale is in
// tokens and the global batch is shown in both units (tokens per sample
// from the latest step).
std::string NoiseScaleAdvice(const v1::BatchPlan& batch, const v1::StepMetrics& step);

// "1.9k": a count in three significant digits at most.
std::string HumanCount(double count);

}  // namespace accumulus::client
