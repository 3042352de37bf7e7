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
// "950", "12.3k", "1.25M": a rate per second.
std::string HumanRate(double per_second);

// `accumulus list`: a header and one row per job.
std::string JobTable(const v1::ListJobsResponse& jobs);
// `accumulus get`: the job's spec, batch plan, state and latest step.
std::string JobDetails(const v1::Job& job);
// `accumulus workers`: one row per worker with its devices and jobs.
std::string WorkerTable(const v1::ListWorkersResponse& workers);

// One line for an event, e.g. "step 3/40 epoch 0 loss 0.6931 ...".
std::string EventLine(const v1::JobEvent& event);
// `accumulus logs`: "2026-12-04T15:30:01Z  attempt 1 rank 0  warning: ..."
// (the controller's own lines say "controller").
std::string LogLine(const v1::JobEvent& event);
// An error for stderr, "error: ..." and a newline: a spec's field violations
// one per line under a count, anything else on one line; what users wrote
// escaped (terminal_text.h).
std::string ErrorText(const Status& status);

}  // namespace accumulus::client
