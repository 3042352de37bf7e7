#include "common/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace accumulus {
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
    if (overrides.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
  return env;
}

// File descriptors opened for one spawn; whatever is left is closed.
struct Fds {
  std::vector<int> open;
  ~Fds() {
    for (int fd : open) close(fd);
  }
  bool Pipe(int ends[2]) {
    if (pipe2(ends, O_CLOEXEC) != 0) return false;
    open.push_back(ends[0]);
    open.push_back(ends[1]);
    return true;
  }
  int Keep(int fd) {  // takes fd out of the cleanup list
    for (auto& f : open) {
      if (f == fd) f = -1;
    }
    return fd;
  }
};

}  // namespace

StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return Status::InvalidArgument("no program to spawn");
  Fds fds;
  int in[2], out[2] = {-1, -1}, messages[2] = {-1, -1}, control[2] = {-1, -1};
  if (!fds.Pipe(in)) return Status::Internal(Errno("pipe"));
  if (options.capture_stdout && !fds.Pipe(out)) return Status::Internal(Errno("pipe"));
  if (options.message_pipe && !fds.Pipe(messages)) return Status::Internal(Errno("pipe"));
  if (options.control_pipe) {
    if (!fds.Pipe(control)) return Status::Internal(Errno("pipe"));
    if (fcntl(control[1], F_SETFL, O_NONBLOCK) != 0) return Status::Internal(Errno("fcntl"));
  }
  int log_fd = -1;
  if (!options.log_path.empty()) {
    log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return Status::Internal(Errno("cannot open log " + options.log_path));
    fds.open.push_back(log_fd);
  }

  // dup2 clears close-on-exec on its target: the child keeps exactly these.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  if (options.capture_stdout)
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  else if (log_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, log_fd, 1);
  if (log_fd >= 0) posix_spawn_file_actions_adddup2(&actions, log_fd, 2);
  if (options.message_pipe) posix_spawn_file_actions_adddup2(&actions, messages[1], 3);
  if (options.control_pipe) posix_spawn_file_actions_adddup2(&actions, control[0], 4);

  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGXFSZ, SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = MergedEnvironment(options.env);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) return Status::Internal("cannot start " + args[0] + ": " + std::strerror(rc));

  std::unique_ptr<Subprocess> child(new Subprocess());
  child->pid_ = pid;
  if (options.capture_stdout) child->stdout_fd_ = fds.Keep(out[0]);
  if (options.message_pipe) child->message_fd_ = fds.Keep(messages[0]);
  if (options.control_pipe) child->control_fd_ = fds.Keep(control[1]);
  // A child that exits before reading its input is seen in Wait(); the
  // parent must ignore SIGPIPE so that this write cannot kill it.
  const int stdin_fd = fds.Keep(in[1]);
  close(fds.Keep(in[0]));  // now, so a dead child gives EPIPE rather than a full pipe
  WriteAll(stdin_fd, options.stdin_data);
  close(stdin_fd);
  return child;
}

Subprocess::~Subprocess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    Wait();
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (message_fd_ >= 0) close(message_fd_);
  if (control_fd_ >= 0) close(control_fd_);
}

bool Subprocess::ReadLine(std::string* line) {
  while (true) {
    const auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      *line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return true;
    }
    if (stdout_fd_ < 0) return false;
    char chunk[4096];
    const ssize_t n = read(stdout_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (buffer_.empty()) return false;
      line->swap(buffer_);
      buffer_.clear();
      return true;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void Subprocess::Signal(int signal) {
  if (!reaped_ && pid_ > 0) kill(pid_, signal);
}

Subprocess::ExitInfo Subprocess::Wait() {
  if (reaped_) return exit_;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    exit_.description = Errno("waitpid");
  } else if (WIFEXITED(status)) {
    exit_.exit_code = WEXITSTATUS(status);
    exit_.success = exit_.exit_code == 0;
    exit_.description = "exit code " + std::to_string(exit_.exit_code);
  } else if (WIFSIGNALED(status)) {
    exit_.signal = WTERMSIG(status);
    exit_.description =
        "killed by signal " + std::to_string(exit_.signal) + " (" + strsignal(exit_.signal) + ")";
  }
  reaped_ = true;
  return exit_;
}

}  // namespace accumulus
