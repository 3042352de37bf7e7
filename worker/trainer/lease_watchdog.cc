#include "worker/trainer/lease_watchdog.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>

#include "worker/trainer/run_log.h"

namespace accumulus::trainer {
namespace {

[[noreturn]] void Lapse(const std::string& describe, const char* why) {
  LogRunEvent(describe, std::string("lease lapsed (") + why + "): stopping now");
  _exit(kLeaseLapsedExitCode);  // no destructors, no checkpoint: the attempt is over
}

}  // namespace

void StartLeaseWatchdog(int fd, std::chrono::milliseconds lease, std::string describe) {
  std::thread([fd, lease, describe = std::move(describe)] {
    const int timeout_ms = static_cast<int>(lease.count());
    char renewals[64];
    while (true) {
      pollfd p{fd, POLLIN, 0};
      const int ready = poll(&p, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) Lapse(describe, "no renewal from the worker");
      const ssize_t n = read(fd, renewals, sizeof renewals);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) Lapse(describe, "the worker closed the lease pipe");
    }
  }).detach();
}

}  // namespace accumulus::trainer
