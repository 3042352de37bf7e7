// How the CLI shows jobs, workers and events: aligned text for people, one
// JSON object per line for programs.
#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "accumulus/v1/controller.pb.h"
#include "common/status.h"

namespace accumulus::client {

// One line of JSON with the .proto field names (as in job spec YAML).
std::string ToJsonLine(const google::protobuf::Message& message);

// "256 = micro 64 × accumulation 4 × devices 1", or "... micro auto ...".
std::string BatchSplit(const v1::BatchPlan& batch);

// "running", "succeeded", ...
std::string StateName(v1::JobState state);
std::string HumanBytes(int64_t bytes);

// `accumulus list`: a header and one row per job.
std::string JobTable(const v1::ListJobsResponse& jobs);
// `accumulus get`: the job's spec, batch plan, state and latest step.
std::string JobDetails(const v1::Job& job);
// `accumulus workers`: one row per worker with its devices and jobs.
std::string WorkerTable(const v1::ListWorkersResponse& workers);

// One line for an event, e.g. "step 3/40 epoch 0 loss 0.6931 ...".
std::string EventLine(const v1::JobEvent& event);
// "[#########.........]  45%  18/40" at `width` characters of bar.
// An error for stderr, "error: ..." and a newline: a spec's field violations
// one per line under a count, anything else on one line; what users wrote
// escaped (terminal_text.h).
std::string ErrorText(const Status& status);

std::string ProgressBar(int64_t done, int64_t total, int width = 30);

}  // namespace accumulus::client
