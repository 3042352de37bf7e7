#include "worker/lease_keeper.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "common/mutex.h"

namespace accumulus::worker {

LeaseKeeper::LeaseKeeper(const ControllerLink* link, TrainerSupervisor* supervisor)
    : link_(link), supervisor_(supervisor) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::Start() {
  thread_ = std::thread([this] { Run(); });
}

void LeaseKeeper::Stop() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
  }
  stop_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::Run() {
  bool held = false;
  auto last_tick = std::chrono::steady_clock::now();
  while (true) {
    const std::chrono::milliseconds trainer_lease = link_->trainer_lease();
    // A tick later than a whole trainer lease: this daemon did not run
    // meanwhile (stopped, frozen, starved), and heard nothing for that
    // reason, not the controller's.
    const auto now = std::chrono::steady_clock::now();
    const auto stalled = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_tick);
    last_tick = now;
    const bool daemon_stalled = trainer_lease.count() > 0 && stalled > trainer_lease;
    if (link_->LeaseHeld()) {
      supervisor_->RenewLeases();
      held = true;
    } else if (held) {
      held = false;
      std::string reason = "worker lease lapsed: no heartbeat echo from the controller for " +
                           std::to_string(link_->lease().count()) + " ms";
      if (daemon_stalled) {
        reason += ", for this worker daemon did not run for " + std::to_string(stalled.count()) +
                  " ms (stopped, frozen or starved of CPU)";
      }
      spdlog::warn("{}", reason);
      supervisor_->Fence(reason, daemon_stalled ? v1::FAILURE_CLASS_WORKER_LOST
                                                : v1::FAILURE_CLASS_CONTROLLER_UNREACHABLE);
    }
    // Four renewals per trainer lease (before the first registration, a
    // tick that just waits for one).
    const auto tick = trainer_lease.count() > 0
                          ? std::max(std::chrono::milliseconds(10), trainer_lease / 4)
                          : std::chrono::milliseconds(100);
    MutexLock lock(&mutex_);
    if (!stopping_) stop_.WaitFor(&mutex_, tick);
    if (stopping_) return;
  }
}

}  // namespace accumulus::worker
