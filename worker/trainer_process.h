// A trainer child process: spawned with its task on stdin and a pipe on file
// descriptor 3 for its length-delimited TrainerMessages; stdout and stderr go
// to a log file. The daemon reads the pipe until the trainer closes it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/trainer.pb.h"
#include "common/status.h"

namespace accumulus::worker {

class TrainerProcess {
 public:
  struct Options {
    std::string binary;                       // path of accumulus-trainer
    std::map<std::string, std::string> env;   // set on top of the daemon's environment
    std::string log_path;                     // the trainer's stdout + stderr
  };

  // Spawns the trainer and hands it `task`.
  static StatusOr<std::unique_ptr<TrainerProcess>> Spawn(const Options& options,
                                                         const v1::TrainerTask& task);
  ~TrainerProcess();  // Kills the process if it still runs, and reaps it.

  // Calls `on_message` for each message until the trainer closes the pipe
  // (it exited or crashed). Returns how the stream ended: OK at a clean end,
  // DATA_LOSS for a truncated or garbled message.
  Status ReadMessages(const std::function<void(const v1::TrainerMessage&)>& on_message);

  // Waits for the process to exit; returns a description such as "exit code
  // 1" or "killed by signal 9 (Killed)", and whether it exited with code 0.
  struct ExitInfo {
    bool success = false;
    std::string description;
  };
  ExitInfo Wait();

  // Sends a signal (SIGTERM to stop at the next window, SIGKILL to end now).
  void Signal(int signal);

  pid_t pid() const { return pid_; }

 private:
  TrainerProcess() = default;

  pid_t pid_ = -1;
  int events_fd_ = -1;
  std::atomic<bool> reaped_{false};
};

}  // namespace accumulus::worker
