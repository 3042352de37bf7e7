// Job ids: "job-" and 12 random characters of a lowercase base32 alphabet
// without look-alikes (60 bits). Random rather than counted, so that no
// state reset ever hands out an id again: checkpoints (in checkpoint.dir,
// under the job's id), logs, dashboards and scripts that name an old job
// never meet a new one by that name. Submission order is kept by the store,
// not read from the id.
#pragma once

#include <string>

namespace accumulus::server {

std::string NewJobId();

}  // namespace accumulus::server
