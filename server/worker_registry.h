// The workers connected to the controller: their registration, link session,
// device slots (which job holds each), rendezvous ports in use and the jobs
// whose stale ranks they are stopping. Not thread-safe: the JobManager holds
// its mutex around every call (the member is GUARDED_BY it, which the
// compiler checks).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "accumulus/v1/worker.pb.h"
#include "server/placement.h"

namespace accumulus::server {

class WorkerRegistry {
 public:
  // Queues a message on a worker's link; must not block.
  using Sender = std::function<void(const v1::ControllerMessage&)>;

  struct Worker {
    v1::Register registration;
    uint64_t session = 0;
    // The job holding each device slot ("" when free), indexed like
    // registration.devices.
    std::vector<std::string> slot_jobs;
    // Jobs with ranks here (placed, or fenced after the worker was lost).
    std::set<std::string> jobs;
    std::set<int> ports_in_use;
    // Jobs whose stale ranks it is stopping (they moved on while it was
    // away): not placed here again until it reports them ended, since a
    // worker runs one attempt of a job at a time.
    std::set<std::string> draining;
    // It said it is shutting down (a preempted status): nothing is placed
    // here any more; its next connection is a new record.
    bool shutting_down = false;
    Sender sender;

    int32_t free_slots() const;
  };

  // null when not connected.
  Worker* Find(const std::string& worker_id);
  // The worker's record, created empty on its first connection (its
  // session and registration are the caller's to set).
  Worker& Connecting(const std::string& worker_id) { return workers_[worker_id]; }
  // Removes the worker if `session` is still its current one.
  bool Remove(const std::string& worker_id, uint64_t session);
  uint64_t NextSession() { return next_session_++; }

  // Tells the worker, if connected.
  void Send(const std::string& worker_id, const v1::ControllerMessage& message);
  // Asks the worker to stop its ranks of `job_id`.
  void SendCancel(const std::string& worker_id, const std::string& job_id,
                  const std::string& reason);

  // The ranks of `job_id` there ended: their slots are free.
  void LeaveJob(const std::string& worker_id, const std::string& job_id);
  // Marks `slot` as held by `job_id`.
  void TakeSlot(const std::string& worker_id, int slot, const std::string& job_id);
  // A free port of the worker's advertised rendezvous range, now in use (0:
  // all taken).
  int TakePort(const std::string& worker_id);
  void ReleasePort(const std::string& worker_id, int port);

  // Free slots by worker, leaving out workers still stopping a stale
  // attempt of `job_id`.
  std::vector<WorkerSlots> FreeSlotsFor(const std::string& job_id) const;
  // Slots of every connected worker, and "id n, id m" to say so.
  int32_t PoolSize() const;
  std::string PoolDescription() const;
  int64_t FreeSlotCount() const;
  int64_t size() const { return static_cast<int64_t>(workers_.size()); }

  std::vector<v1::WorkerInfo> Infos() const;

 private:
  std::map<std::string, Worker> workers_;
  uint64_t next_session_ = 1;
};

}  // namespace accumulus::server
