// Job specs as users write them: YAML whose keys are the JobSpec fields
// (snake_case, as in job.proto).
#pragma once

#include <string>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

namespace accumulus {

// Parses YAML text into a JobSpec. Unknown keys and values of the wrong type
// are INVALID_ARGUMENT naming the key (and `source`, e.g. the file name).
StatusOr<v1::JobSpec> ParseJobSpecYaml(const std::string& yaml, const std::string& source);

// Reads and parses a YAML file.
StatusOr<v1::JobSpec> LoadJobSpecFile(const std::string& path);

}  // namespace accumulus
