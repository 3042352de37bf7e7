// A child process started with posix_spawn: argv, extra environment, optional
// stdin data, stdout captured or logged, an optional message pipe on file
// descriptor 3 and an optional control pipe on file descriptor 4. The child starts with no blocked
// signals and SIGPIPE, SIGINT and SIGTERM at their defaults, whatever the parent set.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace accumulus {

struct SpawnOptions {
  std::vector<std::string> argv;           // argv[0] is the executable's path
  std::map<std::string, std::string> env;  // set on top of the parent's environment
  std::string stdin_data;                  // written to the child's stdin, then closed
  bool capture_stdout = false;             // readable with ReadLine()
  std::string log_path;                    // stderr (and stdout unless captured), appended;
                                           // empty: inherit the parent's
  bool message_pipe = false;               // fd 3 in the child → message_fd() here
  bool control_pipe = false;               // control_fd() here → fd 4 in the child
                                           // (non-blocking here: a writer never waits
                                           // on a child that stopped reading)
};

class Subprocess {
 public:
  static StatusOr<std::unique_ptr<Subprocess>> Spawn(const SpawnOptions& options);
  ~Subprocess();  // Kills the child if it still runs, and reaps it.

  // The next line of captured stdout, without its newline; false at end.
  bool ReadLine(std::string* line);

  // The read end of the child's fd 3, or -1.
  int message_fd() const { return message_fd_; }
  // The write end of the child's fd 4, or -1.
  int control_fd() const { return control_fd_; }

  void Signal(int signal);

  struct ExitInfo {
    bool success = false;  // exited with code 0
    int exit_code = -1;    // -1 when killed by a signal
    int signal = 0;
    std::string description;  // "exit code 1", "killed by signal 9 (Killed)"
  };
  // Waits for the child to exit (once; later calls return the same).
  ExitInfo Wait();

  pid_t pid() const { return pid_; }

 private:
  Subprocess() = default;

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  int message_fd_ = -1;
  int control_fd_ = -1;
  std::string buffer_;  // stdout read but not yet returned
  std::atomic<bool> reaped_{false};
  ExitInfo exit_;
};

}  // namespace accumulus
