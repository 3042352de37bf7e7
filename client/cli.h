// The `accumulus` command line: parses arguments and runs one command.
#pragma once

namespace accumulus::client {

// Returns the process exit code: 0 on success (for watch: the job
// succeeded), 1 when the controller or the job reports a failure, 2 for bad
// usage or an unreadable spec.
int RunCli(int argc, char** argv);

}  // namespace accumulus::client
