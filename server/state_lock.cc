#include "server/state_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>

namespace accumulus::server {
namespace {

std::string OsError(int error) { return std::strerror(error); }

// What the holder wrote: "pid 123 on host h since 2026-12-01T10:00:00Z".
std::string ReadHolder(int fd) {
  char buffer[512];
  const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "a process that has not written its name yet";
  std::string text(buffer, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

std::string Identity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "unknown");
  char since[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(since, sizeof(since), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "pid " + std::to_string(getpid()) + " on host " + host + " since " + since + "\n";
}

}  // namespace

StatusOr<std::unique_ptr<StateLock>> StateLock::Acquire(const std::string& lock_path) {
  const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::Unavailable("cannot open the state lock " + lock_path + ": " + OsError(errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder = error == EWOULDBLOCK ? ReadHolder(fd) : "";
    close(fd);
    if (error != EWOULDBLOCK) {
      return Status::Unavailable("cannot lock " + lock_path + ": " + OsError(error));
    }
    return Status::FailedPrecondition(
        "the state is in use by another controller (" + holder + "; lock " + lock_path +
        "): two controllers on one state would both place its jobs; stop that one or give "
        "this one another --data-dir/--state-db");
  }
  // Ours: say who holds it, for the next one to name.
  const std::string identity = Identity();
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, identity.data(), identity.size(), 0) != static_cast<ssize_t>(identity.size())) {
    const int error = errno;
    close(fd);
    return Status::Unavailable("cannot write " + lock_path + ": " + OsError(error));
  }
  return std::unique_ptr<StateLock>(new StateLock(fd));
}

StateLock::~StateLock() {
  // Emptied first: a reader between our unlock and the next holder's write
  // sees no stale name.
  (void)!ftruncate(fd_, 0);
  close(fd_);  // releases the flock
}

}  // namespace accumulus::server
