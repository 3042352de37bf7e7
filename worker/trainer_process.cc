#include "worker/trainer_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>

extern char** environ;

namespace accumulus::worker {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool WriteAll(int fd, const std::string& data) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

std::vector<std::string> MergedEnvironment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (overrides.count(name) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

}  // namespace

StatusOr<std::unique_ptr<TrainerProcess>> TrainerProcess::Spawn(const Options& options,
                                                                const v1::TrainerTask& task) {
  int task_pipe[2];
  int event_pipe[2];
  if (pipe2(task_pipe, O_CLOEXEC) != 0) return Status::Internal(Errno("pipe"));
  if (pipe2(event_pipe, O_CLOEXEC) != 0) {
    close(task_pipe[0]);
    close(task_pipe[1]);
    return Status::Internal(Errno("pipe"));
  }
  const int log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    for (int fd : {task_pipe[0], task_pipe[1], event_pipe[0], event_pipe[1]}) close(fd);
    return Status::Internal(Errno("cannot open trainer log " + options.log_path));
  }

  // dup2 clears close-on-exec on the targets, so the child keeps exactly
  // stdin, stdout, stderr and fd 3.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, task_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
  posix_spawn_file_actions_adddup2(&actions, event_pipe[1], 3);

  std::vector<std::string> env = MergedEnvironment(options.env);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string binary = options.binary;
  std::vector<char*> argv = {binary.data(), nullptr};

  // The daemon blocks SIGINT/SIGTERM (it waits for them with sigwait) and
  // ignores SIGPIPE; the trainer starts with neither.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t no_signals;
  sigset_t default_signals;
  sigemptyset(&no_signals);
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  sigaddset(&default_signals, SIGINT);
  sigaddset(&default_signals, SIGTERM);
  posix_spawnattr_setsigmask(&attributes, &no_signals);
  posix_spawnattr_setsigdefault(&attributes, &default_signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(task_pipe[0]);
  close(event_pipe[1]);
  close(log_fd);
  if (rc != 0) {
    close(task_pipe[1]);
    close(event_pipe[0]);
    return Status::Internal("cannot start trainer " + binary + ": " + std::strerror(rc));
  }

  std::unique_ptr<TrainerProcess> process(new TrainerProcess());
  process->pid_ = pid;
  process->events_fd_ = event_pipe[0];
  // The task is small; a trainer that dies before reading it shows up as an
  // exit without a TrainerExit message, so a failed write needs no handling
  // beyond not blocking: SIGPIPE is ignored by the daemon.
  WriteAll(task_pipe[1], task.SerializeAsString());
  close(task_pipe[1]);
  return process;
}

TrainerProcess::~TrainerProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    Wait();
  }
  if (events_fd_ >= 0) close(events_fd_);
}

Status TrainerProcess::ReadMessages(
    const std::function<void(const v1::TrainerMessage&)>& on_message) {
  google::protobuf::io::FileInputStream input(events_fd_);
  while (true) {
    v1::TrainerMessage message;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&message, &input, &clean_eof)) {
      if (clean_eof) return Status::Ok();
      return Status::DataLoss("garbled or truncated message from trainer pid " +
                              std::to_string(pid_));
    }
    on_message(message);
  }
}

TrainerProcess::ExitInfo TrainerProcess::Wait() {
  ExitInfo info;
  if (reaped_) return info;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  reaped_ = true;
  if (r < 0) {
    info.description = Errno("waitpid");
  } else if (WIFEXITED(status)) {
    info.success = WEXITSTATUS(status) == 0;
    info.description = "exit code " + std::to_string(WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    info.description = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                       strsignal(WTERMSIG(status)) + ")";
  }
  return info;
}

void TrainerProcess::Signal(int signal) {
  if (!reaped_ && pid_ > 0) kill(pid_, signal);
}

}  // namespace accumulus::worker
