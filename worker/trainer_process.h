// A trainer child process: spawned with its TrainerTask on stdin, a pipe on
// file descriptor 3 for its length-delimited TrainerMessages and one on file
// descriptor 4 for its lease renewals; its stdout and stderr go to a log file.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "accumulus/v1/trainer.pb.h"
#include "common/status.h"
#include "common/subprocess.h"

namespace accumulus::worker {

class TrainerProcess {
 public:
  struct Options {
    std::string binary;                      // path of accumulus-trainer
    std::map<std::string, std::string> env;  // on top of the daemon's environment
    std::string log_path;                    // the trainer's stdout + stderr
  };

  static StatusOr<std::unique_ptr<TrainerProcess>> Spawn(const Options& options,
                                                         const v1::TrainerTask& task);

  // Calls `on_message` for each message until the trainer closes the pipe
  // (it exited or crashed). Returns OK at a clean end, DATA_LOSS for a
  // truncated or garbled message.
  Status ReadMessages(const std::function<void(const v1::TrainerMessage&)>& on_message);

  Subprocess::ExitInfo Wait() { return process_->Wait(); }
  // Renews the trainer's lease (TrainerTask.lease_ms): one byte on its fd 4.
  // Never blocks; a trainer that stopped reading misses nothing it needs.
  void RenewLease();
  // SIGTERM stops the trainer at the next window boundary; SIGKILL now.
  void Signal(int signal) { process_->Signal(signal); }
  pid_t pid() const { return process_->pid(); }

 private:
  explicit TrainerProcess(std::unique_ptr<Subprocess> process) : process_(std::move(process)) {}

  std::unique_ptr<Subprocess> process_;
};

}  // namespace accumulus::worker
