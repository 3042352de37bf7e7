// Where a job's files may be on this worker. A spec's paths are the user's
// words; the worker resolves each against the roots it was started with
// (--data-root for what a job reads: the model, data and labels files;
// --output-root for what it writes: the output and the checkpoint
// directory), after resolving symlinks, and refuses one that ends outside
// them — `..`, an absolute path elsewhere, a symlink out of a root — naming
// the field and the path. A relative path is taken from the first root of
// its kind. A kind without roots is not confined (the worker warns at start).
#pragma once

#include <string>
#include <vector>

#include "accumulus/v1/job.pb.h"
#include "common/status.h"

namespace accumulus::worker {

struct PathRoots {
  std::vector<std::string> data;
  std::vector<std::string> output;
};

// Checks the roots themselves (each an existing directory) and returns them
// resolved. INVALID_ARGUMENT naming the flag and the directory.
StatusOr<PathRoots> ResolveRoots(const PathRoots& roots);

// The spec with each path replaced by where it resolved (absolute, no
// symlinks or `..`), so the trainer opens exactly what was checked.
// FAILED_PRECONDITION naming the field, the path as given and where it
// resolved, for a read path that does not exist or any path outside the
// roots (the job fails permanently: a retry cannot fix the spec).
StatusOr<v1::JobSpec> ConfinePaths(const v1::JobSpec& spec, const PathRoots& resolved_roots);

}  // namespace accumulus::worker
