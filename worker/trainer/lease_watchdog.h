// The trainer's half of its lease: a thread that reads the renewals its
// worker daemon writes on file descriptor 4 and ends the process when none
// came for a lease's length, or when the daemon closed the pipe. It is the
// fence for a daemon that is itself frozen (SIGSTOP, a hung host thread): its
// trainers stop on their own, so the controller may start the job's next
// attempt elsewhere once the worker's lease and this one have run out,
// without two attempts ever training at once.
//
// It exits at once rather than at the next window boundary: a superseded
// attempt must not write another checkpoint, and the work since the last
// checkpoint is trained again by the next attempt anyway.
#pragma once

#include <chrono>
#include <string>

namespace accumulus::trainer {

// The exit code of a trainer whose lease lapsed.
inline constexpr int kLeaseLapsedExitCode = 75;

// Starts the watchdog (a detached thread) on `fd`. `describe` names the
// rank in the line logged to stderr before the exit.
void StartLeaseWatchdog(int fd, std::chrono::milliseconds lease, std::string describe);

}  // namespace accumulus::trainer
