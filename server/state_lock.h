// One controller per state: an exclusive flock(2) on a lock file beside the
// state database, held for the controller's lifetime. A second controller
// started on the same state refuses to start and names the holder (its pid,
// host and start time, which the holder writes into the file).
//
// The kernel drops the lock when the holder dies, however it dies (SIGKILL
// included), so a stale lock file never blocks a restart. flock is local to
// one host's kernel, or to a file system that forwards it (NFSv4 does);
// docs/operations.md says so.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace accumulus::server {

class StateLock {
 public:
  // Takes the lock on `lock_path` (created when missing). FAILED_PRECONDITION
  // naming the holder when another process has it; UNAVAILABLE naming the
  // file and the OS error when it cannot be opened.
  static StatusOr<std::unique_ptr<StateLock>> Acquire(const std::string& lock_path);
  ~StateLock();  // releases the lock
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

  // The lock file of the state database at `state_db`.
  static std::string PathFor(const std::string& state_db) { return state_db + ".lock"; }

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace accumulus::server
