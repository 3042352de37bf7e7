// Graceful stop for daemons: block SIGINT, SIGTERM and SIGHUP in every
// thread (call before starting any), then wait for one on the main thread.
// SIGHUP — the terminal closed, as when an ssh session running `accumulus up`
// drops — stops them as SIGTERM does: nothing here reloads on it, and its
// default action would kill them mid-write, trainers and all.
#pragma once

namespace accumulus {

void BlockTerminationSignals();
// Returns the signal received (SIGINT, SIGTERM or SIGHUP).
int WaitForTerminationSignal();

// A write past RLIMIT_FSIZE (`ulimit -f`, a container's file-size limit)
// fails with EFBIG instead of killing the process with SIGXFSZ, so that a
// full file is reported as the error it is: the controller's state store
// retries, a trainer's checkpoint warns and training goes on.
void IgnoreFileSizeLimitSignal();

}  // namespace accumulus
