// Files a run leaves behind (checkpoints, their lineage, the final
// parameters) are replaced whole or not at all: written to a temporary file
// in the same directory, fsynced, renamed over the target, and the directory
// fsynced, so a crash leaves the old file or the new one, never a mix.
#pragma once

#include <string>

#include "common/status.h"

namespace accumulus::engine {

// A failed file operation, classified by what a retry would meet: a
// directory the trainer may not write (permissions, a read-only or missing
// mount, a file where a directory should be) or a full disk fails the same
// way on every attempt, so the job fails once, permanently
// (FAILED_PRECONDITION / RESOURCE_EXHAUSTED); anything else (EIO, a
// transient network file system error) may pass on a retry (INTERNAL).
// `what` names the operation and the path; the OS error is appended.
Status FileError(const std::string& what, int error);

// Writes `data` to `temp` and fsyncs it (no rename).
Status WriteFileSynced(const std::string& temp, const std::string& data);

// Renames `temp` over `path` and fsyncs the directory; `temp` is removed
// when the rename fails.
Status RenameDurably(const std::string& temp, const std::string& path);

// WriteFileSynced to `path` + `temp_suffix`, then RenameDurably over `path`.
// The suffix keeps writers of different processes (or attempts) apart.
Status ReplaceFileDurably(const std::string& path, const std::string& data,
                          const std::string& temp_suffix);

}  // namespace accumulus::engine
