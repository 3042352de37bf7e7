// The worker's lease, enforced: while the controller keeps echoing the
// worker's heartbeats (ControllerLink::LeaseHeld) the keeper renews every
// trainer's lease, several times per trainer lease; the moment the worker's
// lease lapses it kills the trainers (TrainerSupervisor::Fence) and stops
// renewing. Whichever of the two processes is frozen, a rank stops within
// the worker's lease plus the trainer's of the last heartbeat the controller
// heard, which is before the controller declares the worker lost
// (docs/operations.md, "Attempts, fencing and leases").
#pragma once

#include <mutex>
#include <thread>

#include "common/mutex.h"
#include "worker/controller_link.h"
#include "worker/trainer_supervisor.h"

namespace accumulus::worker {

class LeaseKeeper {
 public:
  LeaseKeeper(const ControllerLink* link, TrainerSupervisor* supervisor);
  ~LeaseKeeper();  // Stop()s

  void Start();
  void Stop() EXCLUDES(mutex_);

 private:
  void Run() EXCLUDES(mutex_);

  const ControllerLink* const link_;
  TrainerSupervisor* const supervisor_;
  std::thread thread_;
  Mutex mutex_;
  CondVar stop_;
  bool stopping_ GUARDED_BY(mutex_) = false;
};

}  // namespace accumulus::worker
