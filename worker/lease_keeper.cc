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
  while (true) {
    const std::chrono::milliseconds trainer_lease = link_->trainer_lease();
    if (link_->LeaseHeld()) {
      supervisor_->RenewLeases();
      held = true;
    } else if (held) {
      held = false;
      const std::string reason = "worker lease lapsed: no heartbeat echo from the controller for " +
                                 std::to_string(link_->lease().count()) + " ms";
      spdlog::warn("{}", reason);
      supervisor_->Fence(reason);
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
